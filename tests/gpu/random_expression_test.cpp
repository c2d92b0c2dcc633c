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

TEST_CASE("random expressions match the reference", "[gpu][heavy]") {
  constexpr int kCases = 40;
  for (int i = 0; i < kCases; ++i) {
    const auto seed = static_cast<std::uint64_t>(1000 + i);
    const KernelCase c = random_expression_case(seed, 300, 2, 2);
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
