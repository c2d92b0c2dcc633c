// Split-KV merge (decoding): with FwdParams::num_splits > 1 every block of the forward kernel
// attends to one slice of the key tiles and writes its normalised partial output and its LSE;
// this kernel merges the slices of each row into the final output and LSE:
//   lse = log(sum_s exp(lse_s)),   out = sum_s exp(lse_s - lse) * out_s
// (the weights sum to one). A slice that kept no key has lse_s = -inf and weight 0; a row no
// slice kept writes zeros and lse = -inf, as the unsplit kernel does. A NaN in any slice's LSE
// (a NaN score) reaches the row's output and LSE, as it would unsplit.
#pragma once

#include "attnjit/copy.cuh"
#include "attnjit/fwd_params.cuh"
#include "attnjit/numeric.cuh"

namespace attnjit {

// One warp per output row; rows are (batch, head, query) in FwdParams::lse order.
constexpr int kCombineWarps = 4;
constexpr int kCombineThreads = 32 * kCombineWarps;

#if ATTNJIT_KERNEL_CODE

template <typename ELEM, int HEAD_DIM>
ATTNJIT_DEVICE void split_combine(const SplitCombineParams& p) {
  static_assert(HEAD_DIM % 8 == 0 && HEAD_DIM <= 256, "a lane merges 8 columns; 32 lanes at most");
  constexpr float kLog2e = 1.4426950408889634f;
  constexpr float kLn2 = 0.6931471805599453f;
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const long long rows = static_cast<long long>(p.batch) * p.num_heads_q * p.q_len;
  const long long row = static_cast<long long>(blockIdx.x) * kCombineWarps + warp;
  if (row >= rows) return;  // warp-uniform: the shuffles below see whole warps

  // ---- The row's LSE: max over the slices, then the sum of exponentials around it.
  float max_lse = neg_infinity();
  bool saw_nan = false;
  for (int s = lane; s < p.num_splits; s += 32) {
    const float l = p.lse_partial[s * rows + row];
    saw_nan = saw_nan || l != l;
    max_lse = fmaxf(max_lse, l);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    max_lse = fmaxf(max_lse, __shfl_xor_sync(0xffffffffu, max_lse, offset));
  }
  saw_nan = __ballot_sync(0xffffffffu, saw_nan) != 0u;
  const bool empty = max_lse == neg_infinity();  // no slice kept a key (or only NaN)
  float sum = 0.0f;
  if (!empty) {
    for (int s = lane; s < p.num_splits; s += 32) {
      sum += fast_exp2((p.lse_partial[s * rows + row] - max_lse) * kLog2e);
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const float lse = saw_nan ? quiet_nan() : empty ? neg_infinity() : max_lse + fast_log2(sum) * kLn2;

  const int q_idx = static_cast<int>(row % p.q_len);
  const int bh = static_cast<int>(row / p.q_len);
  if (p.lse != nullptr && lane == 0) store_global_f32(p.lse + row, lse);

  // ---- The output: lane l merges columns 8l .. 8l + 7 (whole 16-byte chunks of the row).
  constexpr int kLanes = HEAD_DIM / 8;
  if (lane >= kLanes) return;
  float acc[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) acc[c] = 0.0f;
  if (!empty || saw_nan) {
    for (int s = 0; s < p.num_splits; ++s) {
      const float l = p.lse_partial[s * rows + row];
      // Note: a slice with lse_s = -inf (no key kept) has weight exactly 0 and an all-zero
      // partial; skipping it also avoids -inf - -inf when every other slice is NaN.
      if (l == neg_infinity()) continue;
      const float weight = fast_exp2((l - lse) * kLog2e);
      const float* part = p.o_partial + (s * rows + row) * HEAD_DIM + 8 * lane;
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[c] += weight * part[c];
    }
  }
  const int b = bh / p.num_heads_q;
  const int h = bh % p.num_heads_q;
  unsigned short* out = static_cast<unsigned short*>(p.o) + b * p.o_stride[0] +
                        h * p.o_stride[1] + q_idx * p.o_stride[2] + 8 * lane;
  Bytes16 packed;
  packed.x = ElemTraits<ELEM>::pack2(acc[0], acc[1]);
  packed.y = ElemTraits<ELEM>::pack2(acc[2], acc[3]);
  packed.z = ElemTraits<ELEM>::pack2(acc[4], acc[5]);
  packed.w = ElemTraits<ELEM>::pack2(acc[6], acc[7]);
  store_global_16(out, packed);
}

#endif  // ATTNJIT_KERNEL_CODE

}  // namespace attnjit
