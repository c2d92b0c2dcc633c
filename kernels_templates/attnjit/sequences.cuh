// Variable-length sequences (FlashAttention's cu_seqlens, seqused_k): where each sequence of a
// batch lies in packed query / key rows and how many keys it has. Shared by the host (the CPU
// reference, which reads the tables from host memory) and the kernels (from device memory), so
// both clamp a malformed table the same way.
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

// A call's sequence tables; a null table leaves its side uniform (every sequence q_len queries
// of its own batch entry, kv_len keys).
struct SequenceTables {
  // [batch + 1]: sequence b's queries are rows [q_starts[b], q_starts[b + 1]) of the packed
  // query and output tensors of q_total rows.
  const int* q_starts;
  // [batch + 1]: the same for packed keys and values of kv_total rows (dense only).
  const int* kv_starts;
  // [batch]: sequence b has kv_lens[b] keys, the first of its batch entry or its page-table row
  // (a padded dense cache or a paged one).
  const int* kv_lens;
  int q_total;
  int kv_total;
};

// A dense call with sequence tables reads each sequence's keys as one page of kDensePageRows rows
// (FwdParams::kv_page; attention_fwd.cuh): its keys must number fewer.
constexpr int kDensePageRows = 1 << 30;

// One sequence's rows: its first query row in the packed query and output tensors (0 when they
// are not packed), its query count, its first key row (0 unless packed) and its key count.
struct SequenceExtent {
  int q_row0;
  int q_len;
  int kv_row0;
  int kv_len;
};

// Sequence b's extent. The counts never exceed the call's q_len and kv_len (the grid and the
// tensor summaries are sized by them) and the rows never leave the packed tensors: a start is
// clamped into [0, total], an end into [start, total], a length into [0, kv_len]. So a malformed
// table (decreasing starts, lengths past the cache) reads and writes only the call's own rows;
// which rows it gets is then unspecified, as for any out-of-range input.
ATTNJIT_HD int clamp_row(int value, int low, int high) {
  return value < low ? low : (value > high ? high : value);
}
ATTNJIT_HD SequenceExtent sequence_extent(const SequenceTables& tables, int b, int q_len,
                                          int kv_len) {
  SequenceExtent extent{0, q_len, 0, kv_len};
  if (tables.q_starts != nullptr) {
    const int begin = clamp_row(tables.q_starts[b], 0, tables.q_total);
    const int end = clamp_row(tables.q_starts[b + 1], begin, tables.q_total);
    extent.q_row0 = begin;
    extent.q_len = end - begin < q_len ? end - begin : q_len;
  }
  if (tables.kv_starts != nullptr) {
    const int begin = clamp_row(tables.kv_starts[b], 0, tables.kv_total);
    const int end = clamp_row(tables.kv_starts[b + 1], begin, tables.kv_total);
    extent.kv_row0 = begin;
    extent.kv_len = end - begin < kv_len ? end - begin : kv_len;
  } else if (tables.kv_lens != nullptr) {
    extent.kv_len = clamp_row(tables.kv_lens[b], 0, kv_len);
  }
  return extent;
}

}  // namespace attnjit
