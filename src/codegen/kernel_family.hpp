// Which forward kernel template a variant gets on an arch: the FlashAttention-2 style SM80 kernel
// (attention_fwd.cuh, every arch) or the Hopper kernel (attention_fwd_sm90.cuh, sm_90a only), and
// the one switch that overrides the choice (ATTNJIT_KERNEL_FAMILY).
#pragma once

#include "common/attention_problem.hpp"
#include "expr/expression.hpp"

namespace attnjit::codegen {

enum class KernelFamily { sm80, sm90 };

const char* kernel_family_name(KernelFamily family);  // "sm80", "sm90"

// What a kernel is compiled for: compute capability sm / 10 . sm % 10, and whether the
// arch-specific features of the "a" target (wgmma, setmaxnreg: sm_90a) are available.
// Note: implicit from an int, so that `90` reads as plain sm_90.
struct Target {
  constexpr Target(int sm_value, bool arch_specific_value = false)  // NOLINT(google-explicit-constructor)
      : sm(sm_value), arch_specific(arch_specific_value) {}
  int sm;
  bool arch_specific;
};

// How the family is picked: `environment` reads ATTNJIT_KERNEL_FAMILY (auto | sm80 | sm90; unset
// or empty means auto); the others are that value given explicitly (the CUDA backend asks for
// sm80 when TMA cannot express a call; the fake driver rebuilds what a sidecar records).
enum class FamilyRequest { environment, automatic, sm80, sm90 };

// ATTNJIT_KERNEL_FAMILY as a request other than `environment`; throws Error(invalid_argument)
// for a value that is none of auto, sm80, sm90.
FamilyRequest family_request_from_environment();

// Note: `auto` gives users the sm90 kernel only once it has passed on hardware: test_gpu with
// ATTNJIT_KERNEL_FAMILY=sm90 (the Hopper probes first) and compute-sanitizer memcheck,
// racecheck and synccheck, on an H200 with driver 580 (2026-11-26, tools/gpu-check.sh --only
// test,sanitize; docs/PERFORMANCE.md, "Measured on an H200"). tests/capi/inspect_test.c expects
// `auto` to give sm90 on sm_90a.
inline constexpr bool kSm90VerifiedOnHardware = true;

// Whether the sm90 kernel implements everything this variant needs (dtype, head dim, mask,
// score); grows as the kernel does.
bool sm90_supports(DType dtype, int head_dim, const expr::Expression& mask,
                   const expr::Expression& score);

// The family of a variant's kernel: sm90 only on an arch-specific sm_90 target and only where
// sm90_supports; there `automatic` takes it when kSm90VerifiedOnHardware and `sm90` always;
// `sm80`, and every other case, gets the SM80 kernel. (A forced sm90 that cannot be honoured is
// logged at debug level by the caller: jit/variant_compiler.cpp.)
KernelFamily choose_kernel_family(const Target& target, DType dtype, int head_dim,
                                  const expr::Expression& mask, const expr::Expression& score,
                                  FamilyRequest request);

}  // namespace attnjit::codegen
