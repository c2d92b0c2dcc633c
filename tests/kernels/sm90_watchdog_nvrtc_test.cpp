// The sm90 kernel with ATTNJIT_TUNE=sm90_watchdog_ms (sm90_barrier.cuh's mbarrier_wait reads
// %globaltimer after a failed try and traps past the limit), compiled by NVRTC for sm_90a: the
// device printf needs no header, ptxas spills little (and serialises the wgmma), and the
// default kernel's PTX has none of it (its mbarrier_wait is the plain try_wait loop).
#include <catch2/catch.hpp>
#include <string>

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

TEST_CASE("an sm90 kernel with the mbarrier watchdog times its waits, prints and traps",
          "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  tuning.sm90_watchdog_ms = 5000;
  const auto watched = causal_sm90_kernel(tuning);
  REQUIRE(watched.config.family == codegen::KernelFamily::sm90);
  const std::string ptx = ptx_of(watched.source);
  CHECK(ptx.find("%globaltimer") != std::string::npos);
  CHECK(ptx.find("trap;") != std::string::npos);
  CHECK(ptx.find("vprintf") != std::string::npos);

  const auto cubin = attnjit::nvrtc::compile_program(watched.source, "sm_90a", false);
  INFO(cubin.log);
  const auto found = cubin.resources.find(codegen::kForwardEntry);
  REQUIRE(found != cubin.resources.end());
  // The printf calls (one per wait site, inlined) cost the registers the call saves around
  // them: a little spilling in a kernel that is never timed (56 / 124 bytes and 80 bytes of
  // stack at the time of writing). A bound, so that a blow-up still shows.
  CHECK(found->second.spill_store_bytes <= 256);
  CHECK(found->second.spill_load_bytes <= 256);
  CHECK(found->second.stack_frame_bytes <= 256);
  // setmaxnreg still holds (an out-of-line printf path made ptxas ignore it)...
  CHECK(cubin.log.find("'setmaxnreg' ignored") == std::string::npos);
  // ...but the printf is a call inside the wgmma pipeline, so ptxas serialises the wgmma: a
  // watchdog kernel finds hangs and computes correct results, it is never timed (docs/KERNELS.md
  // says so; if ptxas stops serialising, update them).
  CHECK(cubin.log.find("wgmma pipeline crossing function boundary") != std::string::npos);
}

TEST_CASE("the default sm90 kernel's PTX has no trace of the watchdog", "[kernels][nvrtc][sm90]") {
  const std::string ptx = ptx_of(causal_sm90_kernel({}).source);
  CHECK(ptx.find("mbarrier.try_wait.parity") != std::string::npos);
  CHECK(ptx.find("%globaltimer") == std::string::npos);
  CHECK(ptx.find("trap;") == std::string::npos);
  CHECK(ptx.find("vprintf") == std::string::npos);
}
