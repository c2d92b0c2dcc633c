// The forward kernel's single launch argument. Shared by host and device so the layout agrees.
#pragma once

#include "attnjit/hd.cuh"
#include "attnjit/packed_rows.cuh"
#include "attnjit/row_divisor.cuh"
#include "attnjit/sequences.cuh"
#include "attnjit/variant_args.cuh"

namespace attnjit {

struct FwdParams {
  const void* q;  // bf16 or fp16, element (b, h, row, d) at b*q_stride[0] + h*q_stride[1] + row*q_stride[2] + d
  const void* k;
  const void* v;
  void* o;     // same dtype as q
  float* lse;  // optional, [batch, num_heads_q, q_len] contiguous, natural log
  long long q_stride[3];  // batch, head, row (elements); the head-dim stride is 1
  long long k_stride[3];
  long long v_stride[3];
  long long o_stride[3];
  int batch;
  int num_heads_q;
  int num_heads_kv;  // num_heads_q is a multiple of it (GQA / MQA)
  int q_len;
  int kv_len;
  float scale;  // softmax scale applied to q.k before the score expression
  // Split-KV (decoding: too few query tiles to fill the GPU, many key tiles). With
  // num_splits > 1 the key tiles of each (batch, head) are cut into slices, one block each, which
  // write their normalised output to o_partial and their LSE to lse_partial instead of o and lse;
  // attnjit_split_combine (split_combine.cuh) merges the slices. A block's slot is its index over
  // the query tiles (the launch has batch * num_heads_q * num_splits of them); slot s's rows are
  // rows [s * q_len, (s + 1) * q_len) of the partials, in the order lse gives the launch's rows
  // (with packed GQA: a group's query heads, each its queries). Unsplit calls pass
  // num_splits = 1 and null pointers.
  // - Uniform (split_slots null): (b, h)'s slots are (b * num_heads_q + h) * num_splits + i,
  //   slice i of key tiles [i * split_tiles, (i + 1) * split_tiles), or for a variant with a mask
  //   slice i of the tiles from the query tile's first kept one on (kept_span_slice).
  // - Balanced (split_slots set; kernels with sequence tables, calls with per-sequence key
  //   counts): head h's slots are [h * S, (h + 1) * S), S = batch * num_splits. Sequence b takes
  //   n_b = max(1, ceil(tiles_b / chunk)) consecutive ones of them, slice i its key tiles
  //   [i * chunk, (i + 1) * chunk), with chunk the smallest of 32 candidates that fits every
  //   sequence's slices into S (AttentionForward::balanced_slice); the slots past them are idle.
  //   So a short sequence's keys take one or two blocks and a long one's many, where uniform
  //   slices leave the longest sequence's blocks to end the step. The block of (b, h)'s first
  //   slice writes split_slots[2 * (b * num_heads_q + h)] = its slot, [... + 1] = n_b.
  // - Packed queries (sequences.q_starts; uniform slices, the sm90 split kernel): slice i of
  //   query head h writes packed row p at (i * num_heads_q + h) * q_total + p, so the partials
  //   are the packed rows' (a padded [slot][q_len] would be sized by the longest sequence).
  float* o_partial;    // [slots][q_len][head_dim], fp32
  float* lse_partial;  // [slots][q_len], natural log
  int* split_slots;    // [batch * num_heads_q][2] (balanced), or null
  int num_splits;
  int split_tiles;
  // Packed GQA (decoding: a few queries per sequence, num_heads_q / num_heads_kv > 1). When > 1,
  // the host launches the call as num_heads_kv heads of pack_gqa * pack_q_len query rows each, so
  // a block reads each key tile once for its whole group: row r is query r / pack_gqa of query
  // head r % pack_gqa of the group. q_stride[2] and o_stride[2] are then the query heads' stride
  // and pack_q_stride, pack_o_stride the queries' (with one query, rows are heads: row r at
  // r * q_stride[2]). The mask and score, which may not use h or num_heads then, see the real
  // query: q_idx r / pack_gqa of q_len pack_q_len. lse and the split-KV partials keep the call's
  // own row order (batch, query head, query). Only the decoding entry and the sm90 split kernel
  // take pack_q_len > 1 (gqa_pack_group). 1: not packed.
  int pack_gqa;
  int pack_q_len;
  // A packed sm90 block's rows: whole queries, pack_gqa * (BLOCK_M / pack_gqa), its Q box
  // (load_packed_q); 0: BLOCK_M (the decoding entry's blocks run on across queries).
  int pack_block_rows;
  unsigned pack_gqa_inverse;  // packed_row_inverse(pack_gqa): row / pack_gqa as a multiply
  long long pack_q_stride;
  long long pack_o_stride;
  // Paged key/value cache (AttentionBuffers::kv_pages; only a paged kernel reads it, PagedKvOf
  // in attention_fwd.cuh): k and v point at pools of pages, k_stride[0] / v_stride[0] are the
  // page strides, and row j of sequence b is row kv_page.remainder(j) of page
  // kv_pages[b * kv_pages_stride + kv_page.quotient(j)] (pages of any size); a page outside
  // [0, kv_num_pages) reads as zeros. Null for a dense call.
  const int* kv_pages;
  int kv_pages_stride;
  RowDivisor kv_page;
  int kv_num_pages;
  // Variable-length sequences (sequences.cuh; only a kernel with sequence tables reads them,
  // SequenceTablesOf in attention_fwd.cuh): with q_starts the query and output tensors are
  // packed rows (their batch strides unused) and q_len is the longest sequence's query count,
  // with kv_starts the same for keys and values; lse then is [num_heads_q, q_total]. All null for
  // a call without them.
  SequenceTables sequences;
  VariantArgs args;
};

// Split-KV with a mask: slice `split` of `num_splits` of the key tiles [first, all), where
// `first` is the query tile's first kept tile, as [begin, end); the slices partition the span in
// order, their sizes differing by at most one (some are empty when it has fewer tiles than
// slices). Slicing all tiles evenly instead would leave a sliding window at the end of a long
// cache in one or two slices, and the other blocks with nothing to do.
struct KeySlice {
  int begin;
  int end;
};
ATTNJIT_HD KeySlice kept_span_slice(int first, int all, int split, int num_splits) {
  const long long span = all > first ? all - first : 0;
  return {first + static_cast<int>(span * split / num_splits),
          first + static_cast<int>(span * (split + 1) / num_splits)};
}

// The merge kernel's single launch argument.
struct SplitCombineParams {
  const float* o_partial;    // FwdParams::o_partial of the forward launch
  const float* lse_partial;  // FwdParams::lse_partial
  void* o;                   // bf16 or fp16, FwdParams::o with o_stride
  long long o_stride[3];
  float* lse;  // optional, as FwdParams::lse
  int batch;
  int num_heads_q;
  int q_len;
  int num_splits;
  // Balanced split-KV (FwdParams::split_slots): (b, h)'s first slot and slice count, [2 * bh];
  // null: uniform, slot bh * num_splits + i. pack_gqa: the forward launch's GQA packing (its
  // rows of a slot are a group's heads, each its queries).
  const int* split_slots;
  int pack_gqa;
  // Packed queries (FwdParams::sequences' q_starts; uniform slices, no GQA packing): the
  // partials are slice-major packed rows, row p of query head h in slice s at (s * num_heads_q +
  // h) * q_total + p, and the merge has a block per (h, p), which writes only rows a sequence
  // holds (sequence_extent's; the rows around them keep what they held). Null: rows as above.
  const int* q_starts;
  int q_total;
};

}  // namespace attnjit
