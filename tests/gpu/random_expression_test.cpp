// Randomly generated masks and scores, run on the GPU and checked against the reference; the
// seed and the expressions are in each case's name, so a failure reproduces from the log.
#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "common/error.hpp"
#include "gpu_harness.hpp"
#include "support/expression_generator.hpp"

using namespace attnjit;
using namespace attnjit::gpu_test;
using namespace attnjit::kernel_test;

TEST_CASE("random expressions match the reference", "[gpu]") {
  constexpr int kCases = 40;
  for (int i = 0; i < kCases; ++i) {
    const auto seed = static_cast<std::uint64_t>(1000 + i);
    ExpressionGenerator generator(seed);
    KernelCase c;
    c.mask = generator.boolean(2);
    c.score = generator.score();
    c.seed = seed;
    c.dtype = generator.pick(2) == 0 ? DType::bf16 : DType::fp16;
    c.layout = generator.pick(2) == 0 ? Layout::bhld : Layout::blhd;
    c.head_dim = generator.pick(2) == 0 ? 64 : 128;
    c.shape.batch = 1 + generator.pick(2);
    c.shape.num_heads_kv = 1 + generator.pick(2);
    c.shape.num_heads_q = c.shape.num_heads_kv * (1 + generator.pick(2));
    c.shape.q_len = 1 + generator.pick(300);
    c.shape.kv_len = 1 + generator.pick(300);
    c.tolerance_factor = 2.0;
    INFO(c.name());
    try {
      const CaseResult result = run_case(c);
      INFO(result.describe());
      CHECK(result.passed());
    } catch (const Error& error) {
      // An expression the front end rejects is the generator's fault, not the kernel's.
      if (error.status() == Status::parse) {
        WARN("generator produced an invalid expression: " << error.what());
        continue;
      }
      FAIL_CHECK(error.what());
    }
  }
}
