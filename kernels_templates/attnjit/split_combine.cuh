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
#include "attnjit/hd.cuh"
#include "attnjit/numeric.cuh"
#include "attnjit/sequences.cuh"

namespace attnjit {

// One block of kCombineWarps warps per output row (rows in FwdParams::lse order): the merge of a
// decoding step is a few dozen rows of a few dozen slices, so its time is the round trips to
// memory on one row's path, not bandwidth. With the whole block on a row, each thread has at most
// a few slices to read and issues them together: one round trip for the partials (and the LSEs
// beside them) where one warp per row needed one per four slices.
constexpr int kCombineWarps = 4;
constexpr int kCombineThreads = 32 * kCombineWarps;

// A thread covers 8 columns of the row (one 16-byte chunk of fp32 pairs, twice); the row's
// HEAD_DIM / 8 chunks take the next power of two of lanes (head dim 96: 16, four idle), and the
// block's threads form kCombineThreads / that many groups, which take alternate slices.
ATTNJIT_HD constexpr int combine_chunk_lanes(int head_dim) {
  return head_dim / 8 <= 4 ? 4 : head_dim / 8 <= 8 ? 8 : head_dim / 8 <= 16 ? 16 : 32;
}

// Slices a thread has in flight at once: a row of up to kCombineBatch * (kCombineThreads /
// combine_chunk_lanes) slices is one round trip (64 at head dim 128, 32 at 256).
constexpr int kCombineBatch = 8;

// Dynamic shared memory of the merge: each warp's sums of the row (8 floats per chunk lane), then
// each warp's maximum and sum of the slices' LSEs.
ATTNJIT_HD constexpr int split_combine_smem_bytes(int head_dim) {
  return 4 * kCombineWarps * (8 * combine_chunk_lanes(head_dim) + 2);
}

#if ATTNJIT_KERNEL_CODE

// Packed queries (SplitCombineParams::q_starts): whether packed row `row` is one a sequence
// holds, which only then has partials to merge (sequence_extent's rows: from the sequence's
// clamped start, at most q_len of them, before its end). The sequence is the last whose start is
// at or before the row: each warp narrows the batch to 32 candidates a pass with a ballot (one
// pass for up to 32 sequences, two up to 1024), reading the table from L1 after the first warp.
// Warp-uniform, hence block-uniform. A malformed table (decreasing starts) gets some sequence:
// its rows are then unspecified, as the forward kernel's are, but always the call's own.
ATTNJIT_DEVICE bool packed_row_held(const SplitCombineParams& p, int row, int lane) {
  const SequenceTables tables{p.q_starts, nullptr, nullptr, p.q_total, 0};
  const auto start = [&](int b) { return clamp_row(p.q_starts[b], 0, p.q_total); };
  int first = 0, count = p.batch;  // the sequence is among [first, first + count)
  while (count > 1) {
    const int step = (count + 31) / 32;
    const int candidate = first + lane * step;
    const unsigned past = __ballot_sync(
        0xffffffffu, candidate >= first + count || start(candidate) > row);
    const int first_past = __ffs(static_cast<int>(past)) - 1;  // -1: all 32 at or before
    const int last = first_past < 0 ? 31 : first_past - 1;
    if (last < 0) return false;  // before the first sequence
    first += last * step;
    count = min(step, count - last * step);
  }
  if (count < 1) return false;
  const SequenceExtent extent = sequence_extent(tables, first, p.q_len, 0);
  return row >= extent.q_row0 && row < extent.q_row0 + extent.q_len;
}

template <typename ELEM, int HEAD_DIM>
ATTNJIT_DEVICE void split_combine(const SplitCombineParams& p) {
  static_assert(HEAD_DIM % 8 == 0 && HEAD_DIM <= 256, "a lane merges 8 columns; 32 lanes at most");
  constexpr float kLog2e = 1.4426950408889634f;
  constexpr float kLn2 = 0.6931471805599453f;
  constexpr int kLanes = HEAD_DIM / 8;
  constexpr int kChunkLanes = combine_chunk_lanes(HEAD_DIM);
  constexpr int kGroups = kCombineThreads / kChunkLanes;  // slices side by side
  constexpr int kBatch = kCombineBatch;
  const int thread = static_cast<int>(threadIdx.x);
  const int warp = thread / 32;
  const int lane = thread % 32;
  // The rows in FwdParams::lse's order: (batch, head, query), or with packed queries (head,
  // packed row).
  const bool packed_rows = p.q_starts != nullptr;
  const long long rows = packed_rows
                             ? static_cast<long long>(p.num_heads_q) * p.q_total
                             : static_cast<long long>(p.batch) * p.num_heads_q * p.q_len;
  const long long row = blockIdx.x;
  // Launched while the forward kernel's last blocks may still run (grid_dependency.cuh).
  wait_for_prerequisite_grids();
  if (row >= rows) return;  // block-uniform: the barriers below see the whole block
  if (packed_rows && !packed_row_held(p, static_cast<int>(row % p.q_total), lane)) return;
  note_prerequisite_read("the split-KV partials");
  // The row's slots (FwdParams::o_partial): its (batch, head)'s in the forward launch, whose
  // heads are GQA groups with packed GQA (a slot's rows then the group's heads, each its
  // queries), consecutive from the first, balanced or uniform; with packed queries, the row in
  // each slice's packed rows.
  const long long call_bh = row / p.q_len;
  const long long launch_bh = call_bh / p.pack_gqa;
  const long long slot_rows = static_cast<long long>(p.pack_gqa) * p.q_len;
  const long long slot_row = call_bh % p.pack_gqa * p.q_len + row % p.q_len;
  const bool balanced = p.split_slots != nullptr;
  const long long first_slot = balanced ? p.split_slots[2 * launch_bh] : launch_bh * p.num_splits;
  const int num_slices = balanced ? p.split_slots[2 * launch_bh + 1] : p.num_splits;
  const long long slice_rows = static_cast<long long>(p.num_heads_q) * p.q_total;
  const auto partial_row = [&](int slice) {
    return packed_rows ? slice * slice_rows + row : (first_slot + slice) * slot_rows + slot_row;
  };

  unsigned char* const sums_smem = attnjit_dynamic_smem;  // [warp][8 * kChunkLanes] floats
  unsigned char* const max_smem = sums_smem + 4 * kCombineWarps * 8 * kChunkLanes;
  unsigned char* const total_smem = max_smem + 4 * kCombineWarps;

  // ---- The thread's first batch of slices, issued before anything waits: slice
  // group + kGroups * i, its LSE and columns 8 * chunk .. 8 * chunk + 7 of its partial.
  // Note: a slice past the last reads the last one (in bounds either way) and is skipped below;
  // an idle lane (head dim 96) reads chunk 0. The partials are 32-byte aligned: 256-byte aligned
  // scratch, rows of HEAD_DIM floats, 8 floats a lane.
  const int chunk = thread % kChunkLanes;
  const int group = thread / kChunkLanes;
  const bool active = chunk < kLanes;
  const int column = active ? 8 * chunk : 0;
  float slice_lse[kBatch];
  Bytes16 low[kBatch], high[kBatch];
  const auto load_batch = [&](int first) {
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int s = first + group + kGroups * i;
      const int slice = s < num_slices ? s : num_slices - 1;
      slice_lse[i] = p.lse_partial[partial_row(slice)];
      const float* part = p.o_partial + partial_row(slice) * HEAD_DIM + column;
      low[i] = load_global_16(part);
      high[i] = load_global_16(part + 4);
    }
  };
  load_batch(0);

  // ---- The row's LSE: the maximum over the slices (thread t reads slices t, t + 128, ...: with
  // kMaxSplits = 128, one each), then the sum of exponentials around it, each reduced over the
  // warp by shuffles and over the block through shared memory.
  float max_lse = neg_infinity();
  bool saw_nan = false;
  for (int s = thread; s < num_slices; s += kCombineThreads) {
    const float l = p.lse_partial[partial_row(s)];
    saw_nan = saw_nan || l != l;
    max_lse = fmaxf(max_lse, l);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    max_lse = fmaxf(max_lse, __shfl_xor_sync(0xffffffffu, max_lse, offset));
  }
  if (lane == 0) store_shared_32(max_smem + 4 * warp, float_bits(max_lse));
  saw_nan = __syncthreads_or(saw_nan) != 0;  // the barrier also publishes the warps' maxima
#pragma unroll
  for (int w = 0; w < kCombineWarps; ++w) {
    max_lse = fmaxf(max_lse, bits_float(load_shared_u32(max_smem + 4 * w)));
  }
  const bool empty = max_lse == neg_infinity();  // no slice kept a key (or only NaN)
  float sum = 0.0f;
  if (!empty) {
    for (int s = thread; s < num_slices; s += kCombineThreads) {
      sum += fast_exp2((p.lse_partial[partial_row(s)] - max_lse) * kLog2e);
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) store_shared_32(total_smem + 4 * warp, float_bits(sum));
  __syncthreads();
  sum = 0.0f;
#pragma unroll
  for (int w = 0; w < kCombineWarps; ++w) sum += bits_float(load_shared_u32(total_smem + 4 * w));
  const float lse =
      saw_nan ? quiet_nan() : empty ? neg_infinity() : max_lse + fast_log2(sum) * kLn2;
  if (p.lse != nullptr && thread == 0) store_global_f32(p.lse + row, lse);

  // ---- The output: each thread weighs its slices' columns, a batch at a time.
  // Note: a slice with lse_s = -inf (no key kept) is skipped by a select, not weighted by 0: its
  // partial is still read (every slice's block writes its rows; the loads are asm volatile, or
  // the compiler would move them under the skip's predicate, behind the LSE's load again), and a
  // NaN beside it must not reach the row (-inf - -inf) when every other slice is NaN.
  float acc[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) acc[c] = 0.0f;
  for (int first = 0; first < num_slices; first += kGroups * kBatch) {
    if (first > 0) load_batch(first);
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const float values[8] = {bits_float(low[i].x),  bits_float(low[i].y),
                               bits_float(low[i].z),  bits_float(low[i].w),
                               bits_float(high[i].x), bits_float(high[i].y),
                               bits_float(high[i].z), bits_float(high[i].w)};
      const bool skip = first + group + kGroups * i >= num_slices || slice_lse[i] == neg_infinity();
      const float weight = fast_exp2((slice_lse[i] - lse) * kLog2e);
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[c] = skip ? acc[c] : fmaf(weight, values[c], acc[c]);
    }
  }

  // ---- The groups' sums: over the warp's groups by shuffles, then over the warps through
  // shared memory; warp 0's first group writes the row.
#pragma unroll
  for (int offset = kChunkLanes; offset < 32; offset *= 2) {
#pragma unroll
    for (int c = 0; c < 8; ++c) acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], offset);
  }
  if (lane < kChunkLanes) {
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      store_shared_32(sums_smem + 4 * ((warp * kChunkLanes + chunk) * 8 + c), float_bits(acc[c]));
    }
  }
  __syncthreads();
  if (warp != 0 || lane >= kChunkLanes || !active) return;
#pragma unroll
  for (int w = 1; w < kCombineWarps; ++w) {
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      acc[c] += bits_float(load_shared_u32(sums_smem + 4 * ((w * kChunkLanes + chunk) * 8 + c)));
    }
  }
  // Note: packed rows are one batch entry (the forward's batch stride 0 there).
  const int q_idx = static_cast<int>(packed_rows ? row % p.q_total : row % p.q_len);
  const int bh = static_cast<int>(packed_rows ? row / p.q_total : row / p.q_len);
  const int b = packed_rows ? 0 : bh / p.num_heads_q;
  const int h = packed_rows ? bh : bh % p.num_heads_q;
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
