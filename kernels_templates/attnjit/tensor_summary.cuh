// Per-block min/max summaries of an int32 rank-1 tensor, so that a tile's block analysis of
// `t[q_idx]` / `t[kv_idx]` reads O(tile / granularity) values instead of O(tile).
// Matches the host expr::build_summary: there are ceil(index_len / g) blocks and block i covers
// the whole index range [i * g, (i + 1) * g), even past index_len; an index at or past `len`
// reads 0 (the out-of-range value), so a block reaching past the tensor's end includes 0.
#pragma once

#include "attnjit/grid_dependency.cuh"
#include "attnjit/hd.cuh"

namespace attnjit {

#if ATTNJIT_KERNEL_CODE

// One warp per summary block, grid-stride over the launch's warps (blockDim.x a multiple of 32;
// the host launches kSummaryThreads): lane l reads positions begin + l, begin + l + 32, ... (one
// coalesced load of the warp per 32 positions), then the warp's min and max by xor-shuffles.
// O(index_len) work in total.
// Note: the first version gave each summary block one thread that read its granularity
// positions in sequence: 32 cache lines per warp load (a stride of granularity ints between the
// lanes) and, unrolled by 16, 8 dependent rounds of loads for a 128-key tile, several
// microseconds per launch before the forward kernel could start (decoding with a tensor mask
// pays it on every step).
ATTNJIT_DEVICE void tensor_summary(const int* data, int len, int index_len, int granularity,
                                   int* out_min, int* out_max) {
  // The forward kernel (or the call's next summary) may launch now; a summary launched after
  // another waits for it, so the forward kernel's wait covers every summary (grid_dependency.cuh).
  launch_dependent_grids();
  wait_for_prerequisite_grids();
  if (granularity <= 0 || index_len <= 0) return;
  const long long num_blocks = (index_len + granularity - 1) / granularity;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x / 32);
  // Note: the loop over summary blocks is warp-uniform, so every lane reaches the shuffles.
  for (long long block = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
       block < num_blocks; block += warps) {
    const long long begin = block * granularity;
    const long long end = begin + granularity;
    int lo = 0x7fffffff;
    int hi = -0x7fffffff - 1;
    for (long long i = begin + lane; i < end; i += 32) {
      const int value = i < len ? data[i] : 0;
      lo = min(lo, value);
      hi = max(hi, value);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, offset));
      hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, offset));
    }
    if (lane == 0) {
      out_min[block] = lo;
      out_max[block] = hi;
    }
  }
}

#endif  // ATTNJIT_KERNEL_CODE

}  // namespace attnjit
