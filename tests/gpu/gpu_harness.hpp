// One GPU attention case, described by its parameters, run on the device and checked against the
// CPU reference (naive_attention) on fresh random data, with every output poisoned first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/attention_problem.hpp"
#include "compile/variant_compiler.hpp"
#include "reference/compare.hpp"

namespace attnjit::gpu_test {

struct TensorInput {
  std::string decl;                // "doc:int32[1]"
  std::vector<std::int32_t> ints;  // int32 tensors
  std::vector<float> floats;       // float32 tensors
  int dims[2] = {0, 1};
};

struct GpuCase {
  std::string mask;                   // empty: "true"
  std::string score;                  // empty: "score"
  std::vector<std::string> params;    // "W:int"
  std::vector<std::int32_t> scalars;  // one per param, floats as bit patterns
  std::vector<TensorInput> tensors;
  DType dtype = DType::bf16;
  Layout layout = Layout::bhld;
  int head_dim = 64;
  AttentionShape shape;  // head_dim is overwritten with `head_dim`
  int row_padding = 0;
  bool with_lse = true;
  std::uint64_t seed = 1;
  float scale = 0.0f;
  double tolerance_factor = 1.0;  // multiplies output_tolerance(dtype)
  bool managed = false;           // q, k, v, out, lse and tensors in managed memory
  void* stream = nullptr;         // CUstream for the launch; null: the legacy default stream

  std::string name() const;  // every parameter spelled out, for test output
};

struct CaseResult {
  reference::ErrorStats out;
  reference::ErrorStats lse;
  reference::Tolerance out_limit{};
  reference::Tolerance lse_limit{};
  std::int64_t padding_writes = 0;  // output elements outside the view that changed (must be 0)
  KernelOrigin origin = KernelOrigin::compiled;
  bool passed() const;
  std::string describe() const;
};

std::int32_t float_bits(float value);

// The kernel cache every GPU test shares: $ATTNJIT_CACHE_DIR when set (so the sanitizer runs of
// tools/gpu-check.sh reuse what the full run compiled), else a fresh temporary directory.
KernelCache& test_cache();
std::string device_arch();  // "sm_90"
VariantSpec make_spec(const GpuCase& test_case);

// Compiles (or finds) the variant, runs it on the GPU and compares with naive_attention.
CaseResult run_case(const GpuCase& test_case);

}  // namespace attnjit::gpu_test
