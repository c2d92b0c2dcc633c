// The forward kernels of every tile configuration, run under the SIMT emulator on the host and
// checked against the CPU reference: the same case tables as the GPU tests, at smaller sizes.
#include <catch2/catch.hpp>

#include "simt_harness.hpp"
#include "support/case_tables.hpp"
#include "support/expression_generator.hpp"

using namespace attnjit;
using namespace attnjit::kernel_test;

namespace {

void check_simt(const std::vector<KernelCase>& cases, int sm) {
  for (const simt::SimtOutcome& outcome : simt::run_simt_cases(cases, sm)) {
    INFO(outcome.name);
    INFO(outcome.describe());
    CHECK(outcome.passed());
  }
}

}  // namespace

TEST_CASE("emulated: the standard variants match the reference", "[simt]") {
  std::vector<KernelCase> cases;
  for (const KernelCase& c : mask_families(shape(1, 2, 1, 70, 150))) {
    cases.push_back(c);
  }
  check_simt(cases, 80);
}
