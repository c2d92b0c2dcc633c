// Runs one kernel case (support/kernel_case.hpp) on the GPU through cuda::forward: device copies
// of the poisoned inputs, the launch, and the check against the CPU reference.
#pragma once

#include <string>

#include "jit/variant_compiler.hpp"
#include "support/kernel_case.hpp"

namespace attnjit::gpu_test {

using kernel_test::CaseResult;
using kernel_test::KernelCase;

// The kernel cache every GPU test shares: $ATTNJIT_CACHE_DIR when set (so the sanitizer runs of
// tools/gpu-check.sh reuse what the full run compiled), else a fresh temporary directory.
KernelCache& test_cache();
std::string device_arch();  // "sm_90"

// Compiles (or finds) the variant, runs it on the GPU and compares with naive_attention.
CaseResult run_case(const KernelCase& test_case);

}  // namespace attnjit::gpu_test
