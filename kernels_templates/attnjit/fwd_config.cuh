// Shared-memory footprint of the forward kernel, used by the kernel itself and by the host's
// tile-configuration choice (codegen/kernel_config.cpp), so both agree on the launch size.
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

// The tile window of the forward kernel: a bit mask of the non-empty and one of the full key
// tiles among the next 32 * (number of warps) tiles, one 32-bit word per warp each (at most 16
// warps).
constexpr int kMaxForwardWarps = 16;

// Whether the sm80 kernel of a head dim has the decoding features (split-KV, packed GQA:
// FwdParams). Not at head dim 32, whose two blocks per SM leave 128 registers a thread: the
// packed rows' hook index made ptxas spill its causal kernel (4 / 8 bytes, sm_80). The host asks
// the same function before it splits or packs a call.
ATTNJIT_HD constexpr bool has_decoding_features(int head_dim) { return head_dim >= 64; }
constexpr int kTileWindowBytes = 2 * kMaxForwardWarps * 4;
// A kernel with sequence tables (variable-length sequences) keeps its block's sequence extent in
// the last kSequenceWords words of the window's first half, which kernels of at most
// kMaxForwardWarps - kSequenceWords warps leave unused: read there at each use, the counts hold
// no register through the tile loop.
constexpr int kSequenceWords = 3;
// A block of a balanced split (FwdParams::split_slots) hands its slice (sequence, slice, the
// sequence's slices, tiles a slice) from the warp that finds it to the others in the last
// kBalancedSplitWords words of the window's second half, which kernels of at most
// kMaxForwardWarps - kBalancedSplitWords warps leave unused (in the sm90 split kernel: the 16
// bytes before its sequence words, kSm90SplitWordsBytes).
constexpr int kBalancedSplitWords = 4;

// Split-KV (FwdParams::num_splits): a slice keeps at least this many key tiles, so that its fixed
// cost (the Q tile, the pipeline's fill, the fp32 partial store and its share of the merge) is
// shared by more than one tile. Note: 4 until 2026-11-27, when on an H200 (B=1, 32:8 heads, D=128,
// 4K keys) 32 slices of 2 tiles beat the 13 slices of 5 that 4 allowed by 2.5 us (noop) and 6.7 us
// (causal) of 16-23: a block's tiles are a chain of copies, each about a memory latency
// (docs/PERFORMANCE.md, "Twenty-fifth session"). The host sizes uniform slices by it, the kernel
// balanced ones. (The sm90 split kernel's: kSm90MinSplitTiles.)
constexpr int kMinSplitTiles = 2;

// A balanced split's search for its chunk, the key tiles of a slice (FwdParams::split_slots,
// AttentionForward::balanced_slice): `total` key tiles of `batch` sequences over `slots` slots a
// head (slots >= 2 * batch: num_splits >= 2), at least `min_tiles` a slice. A sequence of t tiles
// takes balanced_slices(t, c) slots, so no chunk below `low` fits (their sum is at least
// total / c) and `high` always does (at most total / c + batch); lane i of the searching warp
// tries candidate i, from low in steps of `step` to high (the last lane's), and the smallest that
// fits is taken: the best chunk when high - low < 32, else within one step of it.
struct ChunkSearch {
  int low, high, step;
};
ATTNJIT_HD constexpr ChunkSearch balanced_chunk_search(int total, int slots, int batch,
                                                       int min_tiles = kMinSplitTiles) {
  const int fewest = (total + slots - 1) / slots;
  const int low = fewest > min_tiles ? fewest : min_tiles;
  const int spare = slots - batch;
  const int sure = (total + spare - 1) / spare;
  const int high = sure > low ? sure : low;
  const int step = (high - low + 30) / 31;
  return {low, high, step > 1 ? step : 1};
}
ATTNJIT_HD constexpr int balanced_chunk_candidate(const ChunkSearch& search, int lane) {
  const int candidate = search.low + lane * search.step;
  return lane == 31 || candidate > search.high ? search.high : candidate;
}
ATTNJIT_HD constexpr int balanced_slices(int tiles, int chunk) {
  const int slices = (tiles + chunk - 1) / chunk;
  return slices > 1 ? slices : 1;
}

// The decoding entry (attnjit_fwd_decode, sm80 modules with the decoding features): the forward
// kernel with 32-row blocks of two warps, for launches of at most 32 query rows (a decoding step,
// packed or not). A 128-row tile computes 128 rows of MMA work for the few real ones, which makes
// such calls bound by the tensor cores rather than by reading K and V; small blocks, several per
// SM (codegen's decode tiles), and the warps with no real row skipping the math
// (AttentionForward::run) leave them bound by the reads. Two warps, not one: the tile loaders
// need 64 threads to keep every thread's swizzle fixed (copy.cuh, TileLoadPlan).
constexpr int kDecodeBlockM = 32;
constexpr int kDecodeWarps = 2;

// Q tile [BLOCK_M][HEAD_DIM] plus NUM_STAGES pipeline stages of K and V tiles [BLOCK_N][HEAD_DIM],
// all of 16-bit elements, then the tile window. The output tile is staged in the Q tile's space.
ATTNJIT_HD constexpr int forward_smem_bytes(int head_dim, int block_m, int block_n,
                                            int num_stages) {
  return 2 * head_dim * (block_m + 2 * num_stages * block_n) + kTileWindowBytes;
}

}  // namespace attnjit
