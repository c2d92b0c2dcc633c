// Per-call values of a variant's declared parameters and tensors, as the kernels receive them.
// The layout is shared by the host (which fills it) and the device (which reads it).
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

constexpr int kMaxParams = 16;
constexpr int kMaxTensors = 8;

enum TensorElem : int { kTensorInt32 = 0, kTensorFloat32 = 1 };

// Min/max of an int32 rank-1 tensor over consecutive blocks of `granularity` elements, so that a
// tile's interval analysis of `t[q_idx]` or `t[kv_idx]` costs O(tile / granularity), not O(tile).
// Note: a block that reaches past the tensor's end includes 0 in its range, because an
// out-of-range read yields 0.
struct TensorSummary {
  const int* min;  // null when there is no summary
  const int* max;
  int granularity;
  int num_blocks;
};

struct TensorArg {
  const void* data;
  int dims[2];  // dims[1] is 1 for rank-1 tensors
  int rank;
  int elem;  // TensorElem
  TensorSummary q_summary;   // for reads at exactly q_idx
  TensorSummary kv_summary;  // for reads at exactly kv_idx
};

// Parameters are 32-bit scalars in declaration order: ints as int, floats as their bit pattern.
struct VariantArgs {
  int scalars[kMaxParams];
  TensorArg tensors[kMaxTensors];
};

}  // namespace attnjit
