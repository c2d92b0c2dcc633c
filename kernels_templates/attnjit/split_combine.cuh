// Split-KV merge (decoding): with FwdParams::num_splits > 1 every block of the forward kernel
// attends to one slice of the key tiles and writes its normalised partial output and its LSE;
// this kernel merges the slices of each row into the final output and LSE:
//   lse = log(sum_s exp(lse_s)),   out = sum_s exp(lse_s - lse) * out_s
// (the weights sum to one). A slice that kept no key has lse_s = -inf and weight 0; a row no
// slice kept writes zeros and lse = -inf, as the unsplit kernel does. A NaN in any slice's LSE
// (a NaN score) reaches the row's output and LSE, as it would unsplit.
#pragma once

#include "attnjit/bit_cast.cuh"
#include "attnjit/copy.cuh"
#include "attnjit/fwd_params.cuh"
#include "attnjit/grid_dependency.cuh"
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
  // Launched while the forward kernel's last blocks may still run (grid_dependency.cuh).
  wait_for_prerequisite_grids();
  if (row >= rows) return;  // warp-uniform: the shuffles below see whole warps
  note_prerequisite_read("the split-KV partials");

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
  const float lse =
      saw_nan ? quiet_nan() : empty ? neg_infinity() : max_lse + fast_log2(sum) * kLn2;

  const int q_idx = static_cast<int>(row % p.q_len);
  const int bh = static_cast<int>(row / p.q_len);
  if (p.lse != nullptr && lane == 0) store_global_f32(p.lse + row, lse);

  // ---- The output. A group of kChunkLanes lanes covers the row, lane c of a group columns
  // 8c .. 8c + 7 (whole 16-byte chunks), and the warp's kGroups groups take every kGroups-th
  // slice; the groups' sums are added at the end. Each lane reads its slice's LSE and partial
  // together and weighs them without a branch, so the loads of several slices are in flight at
  // once: a loop that first read the LSE and then, behind a branch on it, the partial waited for
  // two round trips to memory per slice (the merge of 42 slices sat behind 42 of them).
  // Note: a slice with lse_s = -inf (no key kept) is skipped by a select, not weighted by 0: its
  // partial is still read (every slice's block writes its rows; the loads are asm volatile, or
  // the compiler moves them under the skip's predicate, behind the LSE's load again), and a NaN
  // beside it must not reach the row (-inf - -inf) when every other slice is NaN. The partials
  // are 32-byte aligned: 256-byte aligned scratch, rows of HEAD_DIM floats, 8 floats a lane.
  constexpr int kLanes = HEAD_DIM / 8;
  constexpr int kChunkLanes = kLanes <= 4 ? 4 : kLanes <= 8 ? 8 : kLanes <= 16 ? 16 : 32;
  constexpr int kGroups = 32 / kChunkLanes;
  const int chunk = lane % kChunkLanes;
  const int group = lane / kChunkLanes;
  const bool active = chunk < kLanes;
  const int column = active ? 8 * chunk : 0;  // an idle lane (head dim 96) reads chunk 0
  float acc[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) acc[c] = 0.0f;
#pragma unroll 4
  for (int first = 0; first < p.num_splits; first += kGroups) {
    const int s = first + group;
    const int slice = s < p.num_splits ? s : p.num_splits - 1;  // in bounds either way
    const float l = p.lse_partial[slice * rows + row];
    const float* part = p.o_partial + (slice * rows + row) * HEAD_DIM + column;
    const Bytes16 low = load_global_16(part);
    const Bytes16 high = load_global_16(part + 4);
    const float values[8] = {bits_float(low.x),  bits_float(low.y),  bits_float(low.z),
                             bits_float(low.w),  bits_float(high.x), bits_float(high.y),
                             bits_float(high.z), bits_float(high.w)};
    const bool skip = s >= p.num_splits || l == neg_infinity();
    const float weight = fast_exp2((l - lse) * kLog2e);
#pragma unroll
    for (int c = 0; c < 8; ++c) acc[c] = skip ? acc[c] : fmaf(weight, values[c], acc[c]);
  }
#pragma unroll
  for (int offset = kChunkLanes; offset < 32; offset *= 2) {
#pragma unroll
    for (int c = 0; c < 8; ++c) acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], offset);
  }
  if (!active || group != 0) return;
  const int b = bh / p.num_heads_q;
  const int h = bh % p.num_heads_q;
  unsigned short* out = static_cast<unsigned short*>(p.o) + b * p.o_stride[0] +
                        h * p.o_stride[1] + q_idx * p.o_stride[2] + column;
  Bytes16 packed;
  packed.x = ElemTraits<ELEM>::pack2(acc[0], acc[1]);
  packed.y = ElemTraits<ELEM>::pack2(acc[2], acc[3]);
  packed.z = ElemTraits<ELEM>::pack2(acc[4], acc[5]);
  packed.w = ElemTraits<ELEM>::pack2(acc[6], acc[7]);
  store_global_16(out, packed);
}

#endif  // ATTNJIT_KERNEL_CODE

}  // namespace attnjit
