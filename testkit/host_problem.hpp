// A complete host attention problem in the public API's types: q, k, v random (independent
// streams derived from one seed), out and lse poisoned with NaN, padding poisoned everywhere,
// and the attnjit_forward_args that run it. Part of the test kit (testkit/CMakeLists.txt).
#pragma once

#include <cstdint>
#include <vector>

#include "attnjit/attnjit.h"
#include "testkit/host_data.hpp"

namespace attnjit::testkit {

struct Shape {
  int batch = 1;
  int num_heads_q = 1;
  int num_heads_kv = 1;  // num_heads_q % num_heads_kv == 0
  int q_len = 0;
  int kv_len = 0;
  int head_dim = 0;
};

struct ProblemOptions {
  attnjit_dtype dtype = ATTNJIT_DTYPE_BF16;
  attnjit_layout layout = ATTNJIT_LAYOUT_BHLD;
  int row_padding = 0;  // unused elements after each row of every tensor (poisoned with NaN)
  bool with_lse = true;
  std::uint64_t seed = 1;
  Distribution distribution = Distribution::normal;
  float scale = 0.0f;  // 0 means 1/sqrt(head_dim)
};

struct HostProblem {
  Shape shape;
  HostTensor q, k, v, out;
  std::vector<float> lse;  // empty when not requested
  float scale = 0.0f;

  // The call on these host buffers: shape, pointers, dtypes, explicit strides and scale; no
  // params or tensors. Pointers into this object: valid while it lives and is not moved.
  attnjit_forward_args forward_args();
};

HostProblem make_problem(const Shape& shape, const ProblemOptions& options = {});

// `call` with a variant's per-call values; the arrays must outlive the returned call.
attnjit_forward_args with_values(attnjit_forward_args call,
                                 const std::vector<attnjit_scalar>& params,
                                 const std::vector<attnjit_tensor_arg>& tensors);

}  // namespace attnjit::testkit
