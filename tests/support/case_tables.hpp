// The forward-kernel case tables shared by the GPU tests and the SIMT emulator tests.
#pragma once

#include <cstdint>
#include <vector>

#include "kernel_case.hpp"

namespace attnjit::kernel_test {

AttentionShape shape(int batch, int hq, int hkv, int lq, int lkv);
KernelCase with(KernelCase c, DType dtype, Layout layout, int head_dim);

// Document ids over `len` positions in `documents` runs, sorted or shuffled.
TensorInput document_ids(int len, int documents, bool sorted, std::uint64_t seed);

// The standard variants at one shape: no mask, causal, sliding window, prefix-LM, document mask
// (sorted and shuffled ids), ALiBi, soft-cap, a relative bias from a 2-D tensor.
std::vector<KernelCase> mask_families(const AttentionShape& s);

// NaN and +inf planted in q and k (one element, a whole row, a key that some rows keep and some
// do not, one no row keeps) and a score expression that makes NaN: the rows each reaches must be
// NaN, output and lse, exactly as in the reference; the others unaffected. Causal, [1, 2, 1, 100,
// 150] at head dim `head_dim`.
std::vector<KernelCase> non_finite_inputs(int head_dim);

// A mask whose kept key tiles lie in two classification windows of the forward kernel (at head
// dim 64 its 8 warps classify 256 tiles of 64 keys per step; 17000 keys are 266 tiles): kept tiles
// at the start (full and partial), on both sides of the window boundary (tiles 255 and 256) and
// at the ragged end, everything between skipped.
// Unsplit (split_kv = 1), since split-KV would cut its keys into short slices.
KernelCase window_crossing_case();

// Masks whose kept key tiles lie past long stretches of empty ones, for the kernels' skip of
// empty stretches (one interval evaluation per stretch, after a classified window came out
// empty): a band 140,000 keys in (several stretches and, in the sm90 kernel's warp walk, two
// 1024-tile steps), kept keys at the start, the middle and the end with empty windows between, a
// modulo mask whose stretches are undecided but whose tiles are mostly empty, a band that moves
// with the query, and ids read through tensor summaries (both walks skip with them too).
// q_len 20: one query tile, so the emulator stays quick. Unsplit (split_kv = 1): these are the
// shapes split-KV takes, and its slices are shorter than the stretches.
std::vector<KernelCase> empty_stretch_cases();

// Decoding shapes the split-KV path takes (few query rows, many key tiles), with the heuristic's
// slice count on an H100's 132 SMs or a forced one: GQA, a causal mask with the cache offset as
// a parameter, a sliding window that leaves most slices empty, document ids through tensor
// summaries, a row no slice keeps, a score, NaN in one key, uneven slices, two query tiles,
// head dims 64 to 256 (the head-dim-32 kernel has no decoding features), fp16, no LSE, more
// slices (40) than a merge thread reads in one batch, and caches of different lengths in one
// batch (`len[b]`, one of them empty).
std::vector<KernelCase> split_kv_cases();

// Launches of at most 32 query rows that the decoding entry (kDecodeBlockM-row blocks) runs,
// beyond those of split_kv_cases and gqa_decoding_cases: 20 queries of a speculative step over
// a cache (the second warp partly filled), a packed group of 32 (both warps full), exactly 32
// rows with a modulo mask in fp16 at head dim 96, head dim 256 with a score, an unsplit call
// with document ids, and a fully masked row in a split call.
std::vector<KernelCase> decode_entry_cases();

// Decoding steps with GQA (num_heads_q a multiple of num_heads_kv), which pack a group's query
// heads as the rows of one block where neither expression uses h or num_heads: the packed
// group of each, in order, is kGqaDecodingGroups (1: not packed). One query: causal over a
// cache (q_idx seen as 0), document ids through summaries, a score of q_idx and kv_idx with 3
// forced slices and no LSE, a mask using h (not packed), MQA in fp16, and a mask that keeps
// nothing. Several queries (speculative steps, the decoding entry): causal in [B, L, H, D] split
// in 3, document ids of the queries and keys in fp16, 32 rows with a score of the query, a
// first query that keeps nothing, 36 rows in two blocks split in 2, and 33 queries (more than
// the decoding entry takes unpacked: not packed).
std::vector<KernelCase> gqa_decoding_cases();
inline constexpr int kGqaDecodingGroups[] = {4, 8, 2, 1, 16, 4, 4, 4, 8, 4, 4, 1};

// Keys and values in a paged cache (KernelCase::page_size: the pools shuffled, unused pages NaN):
// decoding steps in pages of 16 ([B, L, H, D], GQA packed), of 16 and of 64 with the last pages
// of each sequence unmapped (-1) behind per-sequence lengths, of 1 (a table entry per key) for a
// speculative step, split in 3 slices in pages of 100 (not a multiple of 8: some key tiles cross a
// page's end); prefill, causal in pages of 24 (fp16), and a chunk of 64 queries at the end of a
// 320-key cache in pages of 80.
std::vector<KernelCase> paged_kv_cases();

// Prefills over paged caches for the sm90 kernel (boxes of min(page, the largest power of two
// dividing block_n) rows, each a TMA load from one page): a chunk's causal mask (the queries at
// the end of the keys) in pages of 16 (8 boxes a key tile; the last page part-filled, its other
// rows NaN: the tail maps must cut them), pages of 256 (a key tile inside a page, at an offset in
// it), pages of 24 (boxes of 8, the smallest; not a power of two) with -1 entries behind
// per-sequence lengths, and head dim 256 in pages of 48 (80-key tiles straddle pages, in boxes of
// 16); unmasked head dim 64 (192-row blocks, a producer of 32 registers) in pages of 64.
std::vector<KernelCase> sm90_paged_kv_cases();

// Variable-length sequences (KernelCase::sequences; the sm80 family's kernel with the tables):
// packed queries and keys under a causal mask aligned to each sequence's end that also reads a
// tensor at b (an empty sequence, one with no keys, unused rows around them); packed queries
// over a padded fp16 cache with per-sequence key counts (BLHD, head dim 128); packed queries
// over a paged cache (pages of 16); decoding steps with per-sequence key counts over a paged
// cache, split in 3 slices and GQA-packed; speculative steps over packed keys; head dims 32 and
// 256.
std::vector<KernelCase> varlen_cases();

// Split decoding steps whose sequences have key counts of their own: their slices balanced over
// the counts (FwdParams::split_slots). Without a mask: one query a sequence over a padded cache
// (GQA-packed, head dim 128; an empty sequence, one of 13 keys, the longest at the cache's end);
// a score that reads kv_len over packed fp16 keys (BLHD); speculative steps of 3 queries over a
// paged cache; a batch whose every sequence is empty (zeros and -inf). Then a causal mask over
// the cache, which keeps each sequence's keys (balance_split), and 40 sequences of one head (the
// slot search's scan in passes of 32).
std::vector<KernelCase> balanced_split_cases();

// A negative scale (-0.3) with no mask and with causal at shape `s`: the kernels fold a positive
// scale into the softmax's exponent and must apply a negative one first, in fully kept tiles (no
// mask) and in partial ones (the causal diagonal). Use whole tiles of queries and keys.
std::vector<KernelCase> negative_scale_cases(const AttentionShape& s);

// Scores with a row shift (codegen/factor_score.hpp) at `head_dim`: ALiBi without a mask (the
// row max in the last keys), the distance negated under a mask whose first 20 rows keep nothing,
// a per-row tensor bias plus a multiple of kv_idx, soft-capping plus ALiBi (a core that is not
// qk), per-block and per-row terms only, a per-column tensor term that stays in the core, a
// negative scale (the shift multiplied, not folded), and a sliding window with ALiBi in fp16 and
// blhd. Ragged lengths, q_len != kv_len.
std::vector<KernelCase> row_shift_cases(int head_dim);
// An ALiBi decoding step (3 queries over 900 keys, GQA 4:2) split into 3 slices: each slice's
// LSE carries its rows' shifts into the merge.
KernelCase row_shift_decoding_case();

}  // namespace attnjit::kernel_test
