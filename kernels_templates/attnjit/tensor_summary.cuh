// Per-block min/max summaries of an int32 rank-1 tensor, so that a tile's block analysis of
// `t[q_idx]` / `t[kv_idx]` reads O(tile / granularity) values instead of O(tile).
// Matches the host expr::build_summary: there are ceil(index_len / g) blocks and block i covers
// the whole index range [i * g, (i + 1) * g), even past index_len; an index at or past `len`
// reads 0 (the out-of-range value), so a block reaching past the tensor's end includes 0.
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

#if ATTNJIT_KERNEL_CODE

// One thread per summary block, grid-stride, so any launch shape is correct; O(index_len) work
// in total. Reads within a block are sequential per thread (the tensor is small: one int per
// query or key position).
ATTNJIT_DEVICE void tensor_summary(const int* data, int len, int index_len, int granularity,
                                   int* out_min, int* out_max) {
  if (granularity <= 0 || index_len <= 0) return;
  const int num_blocks = (index_len + granularity - 1) / granularity;
  const int stride = gridDim.x * blockDim.x;
  for (int block = blockIdx.x * blockDim.x + threadIdx.x; block < num_blocks; block += stride) {
    const long long begin = static_cast<long long>(block) * granularity;
    const long long end = begin + granularity;
    int lo = 0x7fffffff;
    int hi = -0x7fffffff - 1;
    for (long long i = begin; i < end; ++i) {
      const int value = i < len ? data[i] : 0;
      lo = min(lo, value);
      hi = max(hi, value);
    }
    out_min[block] = lo;
    out_max[block] = hi;
  }
}

#endif  // ATTNJIT_KERNEL_CODE

}  // namespace attnjit
