#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "reference/attention.hpp"
#include "reference/naive.hpp"
#include "testkit/internal/random_inputs.hpp"
#include "test_variants.hpp"

using namespace attnjit;
using namespace attnjit::reference;
using namespace attnjit::testing;

namespace {

// The message of the Error(invalid_argument) `call` throws; fails the test for anything else.
template <typename Call>
std::string invalid_argument_message(Call&& call) {
  try {
    call();
  } catch (const Error& error) {
    CHECK(error.status() == Status::invalid_argument);
    return error.what();
  }
  FAIL("expected Error(invalid_argument)");
  return {};
}

}  // namespace

TEST_CASE("bad inputs are rejected with invalid_argument and a reason") {
  AttentionShape shape{1, 4, 2, 20, 20, 16};
  auto variant = make_variant("document_sorted", shape);
  HostProblem problem = make_problem(shape);
  AttentionBuffers buffers = problem.buffers();
  ReferenceOptions options;

  struct Case {
    std::string name;
    std::string expected_message;
  };
  const Case expectation = GENERATE(values<Case>({
      {"null query", "must not be null"},
      {"null output", "must not be null"},
      {"bad GQA ratio", "multiple of num_heads_kv"},
      {"zero length", "must be positive"},
      {"mixed dtypes", "same dtype"},
      {"missing tensor data", "tensor 'doc' (argument 0) has no data"},
      {"tensor rank", "declared with rank 1 but has rank 2"},
      {"tensor element type", "declared int32"},
      {"tensor dims", "dims must be positive"},
      {"tile size", "tile_q (0)"},
      {"thread count", "num_threads (-2)"},
      {"expression kinds", "parsed as a mask"},
  }));
  const std::string& name = expectation.name;
  const expr::Expression* mask = &variant->mask;
  const expr::Expression* score = &variant->score;
  if (name == "null query") buffers.q = nullptr;
  if (name == "null output") buffers.out = nullptr;
  if (name == "bad GQA ratio") shape.num_heads_kv = 3;
  if (name == "zero length") shape.kv_len = 0;
  if (name == "mixed dtypes") buffers.v_dtype = DType::fp16;
  if (name == "missing tensor data") variant->args.tensors[0].data = nullptr;
  if (name == "tensor rank") variant->args.tensors[0].rank = 2;
  if (name == "tensor element type") variant->args.tensors[0].elem = kTensorFloat32;
  if (name == "tensor dims") variant->args.tensors[0].dims[0] = 0;
  if (name == "tile size") options.tile_q = 0;
  if (name == "thread count") options.num_threads = -2;
  if (name == "expression kinds") std::swap(mask, score);

  INFO(name);
  const std::string message = invalid_argument_message(
      [&] { attention_forward(*mask, *score, variant->args, shape, buffers, options); });
  CHECK_THAT(message, Catch::Contains(expectation.expected_message));

  if (name != "tile size" && name != "thread count") {  // the naive version has no options
    std::vector<double> out, lse;
    const std::string naive_message = invalid_argument_message(
        [&] { naive_attention(*mask, *score, variant->args, shape, buffers, out, lse); });
    CHECK_THAT(naive_message, Catch::Contains(expectation.expected_message));
  }
}
