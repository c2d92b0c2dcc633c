#include "testkit/host_problem.hpp"

#include <catch2/catch.hpp>
#include <cmath>

#include "testkit/internal/random_inputs.hpp"

using namespace attnjit::testkit;

TEST_CASE("make_problem builds random inputs, poisoned outputs and the call that runs them") {
  const Shape shape{2, 4, 2, 9, 11, 16};
  ProblemOptions options;
  options.dtype = ATTNJIT_DTYPE_FP16;
  options.layout = ATTNJIT_LAYOUT_BLHD;
  options.scale = 0.5f;
  HostProblem problem = make_problem(shape, options);
  const attnjit_forward_args args = problem.forward_args();
  CHECK(args.version == ATTNJIT_FORWARD_ARGS_VERSION);
  CHECK(args.q == problem.q.data());
  CHECK(args.out == problem.out.data());
  CHECK(args.q_dtype == ATTNJIT_DTYPE_FP16);
  CHECK(args.k_strides[2] == 2 * 16);  // blhd: rows are num_heads_kv rows of head_dim apart
  CHECK(args.q_strides[1] == 16);
  CHECK(args.batch == 2);
  CHECK(args.num_heads_q == 4);
  CHECK(args.num_heads_kv == 2);
  CHECK(args.q_len == 9);
  CHECK(args.kv_len == 11);
  CHECK(args.scale == 0.5f);
  CHECK(args.lse == problem.lse.data());
  CHECK(problem.lse.size() == 2 * 4 * 9);
  CHECK(std::isnan(problem.lse[0]));
  CHECK(std::isnan(problem.out.at(1, 3, 8, 15)));
  CHECK(std::isfinite(problem.q.at(1, 3, 8, 15)));
  // q, k and v come from different streams.
  CHECK(problem.q.at(0, 0, 0, 0) != problem.k.at(0, 0, 0, 0));
  CHECK(problem.k.at(0, 0, 0, 0) != problem.v.at(0, 0, 0, 0));

  options.with_lse = false;
  HostProblem without_lse = make_problem(shape, options);
  CHECK(without_lse.forward_args().lse == nullptr);
}

TEST_CASE("the library-typed problem is the kit's problem, seen through the library's types") {
  using namespace attnjit;
  const AttentionShape shape{1, 2, 1, 5, 7, 8};
  reference::ProblemOptions options;
  options.dtype = DType::fp16;
  options.layout = Layout::blhd;
  options.seed = 9;
  reference::HostProblem problem = reference::make_problem(shape, options);
  const AttentionBuffers buffers = problem.buffers();
  CHECK(buffers.q_dtype == DType::fp16);
  CHECK(buffers.k_strides.row == 8);
  CHECK(buffers.q_strides.row == 2 * 8);
  CHECK(buffers.lse == problem.lse.data());

  ProblemOptions kit_options;
  kit_options.dtype = ATTNJIT_DTYPE_FP16;
  kit_options.layout = ATTNJIT_LAYOUT_BLHD;
  kit_options.seed = 9;
  HostProblem kit = make_problem({1, 2, 1, 5, 7, 8}, kit_options);
  CHECK(problem.q.at(0, 1, 4, 7) == kit.q.at(0, 1, 4, 7));
  CHECK(problem.v.at(0, 0, 6, 3) == kit.v.at(0, 0, 6, 3));

  options.with_lse = false;
  CHECK(reference::make_problem(shape, options).buffers().lse == nullptr);
}
