// Every standard variant x dtype x head dim x {sm_80, sm_90} compiles with NVRTC, and ptxas
// reports no spill and no stack frame for the forward and the summary kernels. One TEST_CASE
// per head dim so that CTest runs them in parallel.
#include <catch2/catch.hpp>

#include <cstdio>

#include "codegen/variant_source.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "standard_variants.hpp"

namespace codegen = attnjit::codegen;

namespace {

void check_head_dim(int head_dim) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    const int sm = attnjit::nvrtc::arch_sm(arch);
    for (attnjit::DType dtype : {attnjit::DType::bf16, attnjit::DType::fp16}) {
      for (const auto& variant : attnjit::test::standard_variants()) {
        const auto kernel = codegen::generate_kernel_source(
            variant.mask, variant.score, dtype, head_dim, sm, codegen::FamilyRequest::sm80);
        const auto compiled = attnjit::nvrtc::compile_program(kernel.source, arch, false);
        for (const char* entry : {codegen::kForwardEntry, codegen::kSummaryEntry}) {
          INFO(variant.name << " " << attnjit::dtype_name(dtype) << " head_dim " << head_dim
                            << " " << arch << " " << entry << "\n"
                            << compiled.log);
          const auto found = compiled.resources.find(entry);
          REQUIRE(found != compiled.resources.end());
          const auto& usage = found->second;
          CHECK(usage.spill_store_bytes == 0);
          CHECK(usage.spill_load_bytes == 0);
          CHECK(usage.stack_frame_bytes == 0);
          CHECK(usage.registers > 0);
          CHECK(usage.registers <= 255);
        }
        const auto& fwd = compiled.resources.find(codegen::kForwardEntry)->second;
        std::printf("%-15s %-9s hd %3d %s: %3d registers, %6d B dynamic smem (%d x %d, %d warps, "
                    "%d stages), spills %d/%d, stack %d\n",
                    variant.name.c_str(), std::string(attnjit::dtype_name(dtype)).c_str(),
                    head_dim, arch, fwd.registers, kernel.config.smem_bytes, kernel.config.block_m,
                    kernel.config.block_n, kernel.config.num_warps, kernel.config.num_stages,
                    fwd.spill_store_bytes, fwd.spill_load_bytes, fwd.stack_frame_bytes);
      }
    }
  }
}

}  // namespace

TEST_CASE("standard variants compile without spills, head dim 32", "[kernels][nvrtc]") {
  check_head_dim(32);
}
TEST_CASE("standard variants compile without spills, head dim 64", "[kernels][nvrtc]") {
  check_head_dim(64);
}
TEST_CASE("standard variants compile without spills, head dim 96", "[kernels][nvrtc]") {
  check_head_dim(96);
}
TEST_CASE("standard variants compile without spills, head dim 128", "[kernels][nvrtc]") {
  check_head_dim(128);
}
TEST_CASE("standard variants compile without spills, head dim 256", "[kernels][nvrtc]") {
  check_head_dim(256);
}
