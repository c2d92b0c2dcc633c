#include "reference/attention.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/half.hpp"
#include "testkit/internal/compare.hpp"
#include "reference/naive.hpp"
#include "testkit/internal/random_inputs.hpp"
#include "test_variants.hpp"

using namespace attnjit;
using namespace attnjit::reference;
using attnjit::testing::make_variant;

namespace {

std::string describe_shape(const AttentionShape& s) {
  return fmt::format("B={} Hq={} Hkv={} Lq={} Lkv={} D={}", s.batch, s.num_heads_q, s.num_heads_kv,
                     s.q_len, s.kv_len, s.head_dim);
}

// Runs the tiled reference and the naive one on the same inputs and checks they agree within
// the dtype's output tolerance (and the fp32 lse tolerance).
void check_against_naive(const std::string& variant_name, const AttentionShape& shape,
                         const ProblemOptions& problem_options,
                         const ReferenceOptions& reference_options = {}) {
  auto variant = make_variant(variant_name, shape);
  HostProblem problem = make_problem(shape, problem_options);
  const AttentionBuffers buffers = problem.buffers();
  INFO(variant_name << " " << describe_shape(shape)
                    << " dtype=" << dtype_name(problem_options.dtype)
                    << " layout=" << (problem_options.layout == Layout::bhld ? "bhld" : "blhd")
                    << " tiles=" << reference_options.tile_q << "x" << reference_options.tile_kv);

  attention_forward(variant->mask, variant->score, variant->args, shape, buffers,
                    reference_options);
  std::vector<double> expected_out, expected_lse;
  naive_attention(variant->mask, variant->score, variant->args, shape, buffers, expected_out,
                  expected_lse);

  const ErrorStats out_error = compare_output(shape, buffers, expected_out);
  INFO("out: " << describe(out_error));
  CHECK(within(out_error, output_tolerance(problem_options.dtype)));
  if (buffers.lse != nullptr) {
    const ErrorStats lse_error = compare_lse(shape, buffers.lse, expected_lse);
    INFO("lse: " << describe(lse_error));
    CHECK(within(lse_error, lse_tolerance()));
  }
}

}  // namespace

TEST_CASE("reference matches the naive implementation for every variant and shape") {
  const std::string variant = GENERATE(from_range(attnjit::testing::variant_names()));
  const AttentionShape shape = GENERATE(values<AttentionShape>({
      {1, 1, 1, 1, 1, 32},      // a single element
      {1, 2, 2, 17, 17, 64},    // odd length, one partial tile
      {2, 4, 2, 100, 129, 32},  // GQA, q_len < kv_len
      {1, 4, 1, 129, 100, 40},  // MQA, q_len > kv_len, head_dim not a power of two
      {1, 3, 3, 65, 200, 16},
  }));
  const ReferenceOptions tiles = GENERATE(values<ReferenceOptions>({{0, 64, 64}, {2, 16, 32}}));
  ProblemOptions options;
  options.dtype = DType::fp32;
  check_against_naive(variant, shape, options, tiles);
}

TEST_CASE("reference matches the naive implementation for every dtype and layout") {
  const DType dtype = GENERATE(DType::bf16, DType::fp16, DType::fp32);
  const Layout layout = GENERATE(Layout::bhld, Layout::blhd);
  const int row_padding = GENERATE(0, 3);
  const bool with_lse = GENERATE(true, false);
  const std::string variant = GENERATE(as<std::string>{}, "causal", "document_sorted", "alibi");
  ProblemOptions options;
  options.dtype = dtype;
  options.layout = layout;
  options.row_padding = row_padding;
  options.with_lse = with_lse;
  options.seed = 7;
  check_against_naive(variant, {2, 4, 2, 77, 130, 64}, options, {0, 32, 32});
}

TEST_CASE("reference honours an explicit scale and uniform inputs") {
  ProblemOptions options;
  options.dtype = DType::fp32;
  options.scale = GENERATE(0.5f, 2.0f);
  options.distribution = Distribution::uniform;
  check_against_naive("causal_softcap", {1, 2, 1, 50, 70, 32}, options);
}

TEST_CASE("reference output does not depend on the number of threads") {
  const std::string variant_name =
      GENERATE(as<std::string>{}, "causal", "document_unsorted", "relative_bias");
  const DType dtype = GENERATE(DType::bf16, DType::fp32);
  const AttentionShape shape{2, 4, 2, 150, 150, 64};
  auto variant = make_variant(variant_name, shape);
  ProblemOptions options;
  options.dtype = dtype;
  HostProblem one_thread = make_problem(shape, options);
  HostProblem many_threads = make_problem(shape, options);
  const TileStats stats_one = attention_forward(variant->mask, variant->score, variant->args, shape,
                                                one_thread.buffers(), {1, 32, 32});
  const int threads = GENERATE(2, 3, 8);
  const TileStats stats_many = attention_forward(variant->mask, variant->score, variant->args,
                                                 shape, many_threads.buffers(), {threads, 32, 32});
  INFO(variant_name << " on " << threads << " threads");
  CHECK(std::memcmp(one_thread.out.data(), many_threads.out.data(),
                    one_thread.out.storage_bytes()) == 0);
  CHECK(std::memcmp(one_thread.lse.data(), many_threads.lse.data(),
                    one_thread.lse.size() * sizeof(float)) == 0);
  CHECK(stats_one.total == stats_many.total);
  CHECK(stats_one.empty == stats_many.empty);
  CHECK(stats_one.full == stats_many.full);
  CHECK(stats_one.partial == stats_many.partial);
}

TEST_CASE("reference overwrites every output element and nothing else") {
  const DType dtype = GENERATE(DType::bf16, DType::fp16, DType::fp32);
  const Layout layout = GENERATE(Layout::bhld, Layout::blhd);
  const AttentionShape shape{2, 2, 1, 33, 47, 32};
  auto variant = make_variant("sliding_window", shape);
  ProblemOptions options;
  options.dtype = dtype;
  options.layout = layout;
  options.row_padding = 5;
  HostProblem problem = make_problem(shape, options);  // out, lse and padding are NaN
  attention_forward(variant->mask, variant->score, variant->args, shape, problem.buffers());

  std::int64_t written = 0, untouched_padding = 0;
  const Strides& strides = problem.out.strides();
  std::vector<bool> is_logical(static_cast<std::size_t>(problem.out.storage_elements()), false);
  for (int b = 0; b < shape.batch; ++b) {
    for (int h = 0; h < shape.num_heads_q; ++h) {
      for (int row = 0; row < shape.q_len; ++row) {
        for (int d = 0; d < shape.head_dim; ++d) {
          const std::int64_t index = b * strides.batch + h * strides.head + row * strides.row + d;
          is_logical[static_cast<std::size_t>(index)] = true;
          if (std::isfinite(problem.out.at(b, h, row, d))) ++written;
        }
      }
    }
  }
  for (std::int64_t i = 0; i < problem.out.storage_elements(); ++i) {
    const float value = load_as_float(problem.out.data(), dtype, i);
    if (!is_logical[static_cast<std::size_t>(i)] && std::isnan(value)) ++untouched_padding;
  }
  CHECK(written == std::int64_t{shape.batch} * shape.num_heads_q * shape.q_len * shape.head_dim);
  CHECK(untouched_padding == problem.out.storage_elements() - written);
  for (const float lse : problem.lse) REQUIRE(std::isfinite(lse));
}
