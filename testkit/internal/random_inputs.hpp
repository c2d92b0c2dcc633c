// The test kit's host problems (testkit/host_problem.hpp) in the library's own types (DType,
// Layout, AttentionShape, AttentionBuffers), for internal tests that hand them straight to the
// CPU reference, the CUDA dispatcher or the SIMT emulator. Nothing is computed here: every
// value, stride and poisoned element is the kit's.
#pragma once

#include <cstdint>
#include <vector>

#include "common/attention_problem.hpp"
#include "testkit/host_problem.hpp"

namespace attnjit::reference {

using testkit::Distribution;

// Note: attnjit_dtype and DType list bf16, fp16, fp32 with the same values.
inline attnjit_dtype c_dtype(DType dtype) { return static_cast<attnjit_dtype>(dtype); }

void fill_random(void* data, DType dtype, std::int64_t count, std::uint64_t seed,
                 Distribution distribution = Distribution::normal);
void fill_nan(void* data, DType dtype, std::int64_t count);
Strides padded_strides(Layout layout, int heads, int len, int head_dim, int row_padding);

// testkit::HostTensor whose dtype and strides read in the library's types.
class HostTensor : public testkit::HostTensor {
 public:
  HostTensor() = default;
  HostTensor(DType dtype, Layout layout, int batch, int heads, int len, int head_dim,
             int row_padding = 0);
  explicit HostTensor(testkit::HostTensor tensor) : testkit::HostTensor(std::move(tensor)) {}

  DType dtype() const { return static_cast<DType>(testkit::HostTensor::dtype()); }
  Strides strides() const;
};

struct ProblemOptions {
  DType dtype = DType::bf16;
  Layout layout = Layout::bhld;
  int row_padding = 0;  // unused elements after each row of every tensor (poisoned with NaN)
  bool with_lse = true;
  std::uint64_t seed = 1;
  Distribution distribution = Distribution::normal;
  float scale = 0.0f;  // 0 means 1/sqrt(head_dim)
};

// testkit::make_problem's problem, as the library's types see it.
struct HostProblem {
  AttentionShape shape;
  HostTensor q, k, v, out;
  std::vector<float> lse;  // empty when not requested
  float scale = 0.0f;

  // Pointers into this object: valid while it lives and is not moved.
  AttentionBuffers buffers();
};

HostProblem make_problem(const AttentionShape& shape, const ProblemOptions& options = {});

}  // namespace attnjit::reference
