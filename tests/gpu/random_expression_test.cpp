// Randomly generated masks and scores, and random decoding steps, run on the GPU and checked
// against the reference; the seed and the expressions are in each case's name, so a failure
// reproduces from the log.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>

#include "common/error.hpp"
#include "gpu_harness.hpp"
#include "support/decoding_generator.hpp"
#include "support/expression_generator.hpp"

using namespace attnjit;
using namespace attnjit::gpu_test;
using namespace attnjit::kernel_test;

namespace {

// ATTNJIT_TEST_RANDOM_CASES and ATTNJIT_TEST_RANDOM_SEED (the first seed) change how many cases
// a random test runs and from which seed: a longer search than CI's defaults (each case costs
// the emulator a few seconds), or a smaller one.
int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

// Runs the cases `make` gives for consecutive seeds, each checked on its own, its seed and
// parameters in the failure message.
void check_random_cases(const char* generator, int default_cases, int default_seed,
                        const std::function<KernelCase(std::uint64_t)>& make) {
  const int cases = env_int("ATTNJIT_TEST_RANDOM_CASES", default_cases);
  const int first_seed = env_int("ATTNJIT_TEST_RANDOM_SEED", default_seed);
  for (int i = 0; i < cases; ++i) {
    const auto seed = static_cast<std::uint64_t>(first_seed + i);
    const KernelCase c = make(seed);
    INFO(generator << "(" << seed << "): " << c.name());
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

}  // namespace

TEST_CASE("random expressions match the reference", "[gpu][heavy]") {
  check_random_cases("random_expression_case", 40, 1000,
                     [](std::uint64_t seed) { return random_expression_case(seed, 300, 2, 2); });
}

TEST_CASE("random decoding steps match the reference", "[gpu][heavy]") {
  check_random_cases("random_decoding_case", 24, 20000,
                     [](std::uint64_t seed) { return random_decoding_case(seed); });
}
