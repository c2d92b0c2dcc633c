// The sm90 kernel with ATTNJIT_TUNE=sm90_watchdog_ms (sm90_barrier.cuh's mbarrier_wait reads
// %globaltimer after a failed try; past the limit it fills the host's record and faults),
// compiled by NVRTC for sm_90a: the same resources as without it, and the default kernel's PTX
// has none of it (its mbarrier_wait is the plain try_wait loop).
#include <catch2/catch.hpp>
#include <string>

#include "attnjit/sm90_watchdog_record.cuh"
#include "codegen/variant_source.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "standard_variants.hpp"

namespace codegen = attnjit::codegen;

namespace {

codegen::GeneratedKernel causal_sm90_kernel(const codegen::KernelTuning& tuning) {
  for (const auto& variant : attnjit::test::standard_variants()) {
    if (variant.name != "causal") continue;
    return codegen::generate_kernel_source(variant.mask, variant.score, attnjit::DType::bf16, 128,
                                           codegen::Target(90, true),
                                           codegen::FamilyRequest::sm90, tuning);
  }
  FAIL("no standard variant named causal");
  return {};
}

std::string ptx_of(const std::string& source) {
  const auto compiled = attnjit::nvrtc::compile_program(source, "sm_90a", true);
  return std::string(compiled.image.begin(), compiled.image.end());
}

}  // namespace

TEST_CASE("an sm90 kernel with the mbarrier watchdog times its waits, records and faults",
          "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  tuning.sm90_watchdog_ms = 5000;
  const auto watched = causal_sm90_kernel(tuning);
  REQUIRE(watched.config.family == codegen::KernelFamily::sm90);
  const std::string ptx = ptx_of(watched.source);
  CHECK(ptx.find("%globaltimer") != std::string::npos);
  CHECK(ptx.find(ATTNJIT_SM90_WATCHDOG_SYMBOL_NAME) != std::string::npos);
  CHECK(ptx.find("atom.cas.b32") != std::string::npos);
  CHECK(ptx.find("st.volatile.global.u32") != std::string::npos);
  CHECK(ptx.find("membar.sys") != std::string::npos);
  // No trap (ptxas then ignores setmaxnreg's budgets without a word) and no printf (a call:
  // ptxas serialises the consumers' wgmma around it): sm90_barrier.cuh says why.
  CHECK(ptx.find("trap;") == std::string::npos);
  CHECK(ptx.find("vprintf") == std::string::npos);

  const auto cubin = attnjit::nvrtc::compile_program(watched.source, "sm_90a", false);
  INFO(cubin.log);
  const auto found = cubin.resources.find(codegen::kForwardEntry);
  REQUIRE(found != cubin.resources.end());
  // The same register budget as the kernel without the watchdog, so it is the same kernel plus
  // slow paths: no spills, no stack, no serialised wgmma.
  CHECK(found->second.spill_store_bytes == 0);
  CHECK(found->second.spill_load_bytes == 0);
  CHECK(found->second.stack_frame_bytes == 0);
  CHECK(cubin.log.find("'setmaxnreg' ignored") == std::string::npos);
  CHECK(cubin.log.find("wgmma pipeline crossing function boundary") == std::string::npos);
}

TEST_CASE("the default sm90 kernel's PTX has no trace of the watchdog", "[kernels][nvrtc][sm90]") {
  const std::string ptx = ptx_of(causal_sm90_kernel({}).source);
  CHECK(ptx.find("mbarrier.try_wait.parity") != std::string::npos);
  CHECK(ptx.find("%globaltimer") == std::string::npos);
  CHECK(ptx.find("trap;") == std::string::npos);
  CHECK(ptx.find("vprintf") == std::string::npos);
  CHECK(ptx.find(ATTNJIT_SM90_WATCHDOG_SYMBOL_NAME) == std::string::npos);
}
