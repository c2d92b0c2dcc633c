// Shape and shared-memory footprint of the Hopper forward kernel (attention_fwd_sm90.cuh), used by
// the kernel itself and by the host's configuration choice (codegen/kernel_config.cpp), so both
// agree on the launch size.
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

// Warpgroup 0 produces (TMA), the others consume, 64 query rows each: two of them by default
// (block_m 128), three with ATTNJIT_TUNE=sm90_block_m=192 (FlashAttention-3's head-dim-64 tile),
// one with sm90_block_m=64 (for two blocks per SM at head dims 64 and 128).
constexpr int kSm90BlockM = 128;
constexpr int kSm90WideBlockM = 192;
constexpr int kSm90NarrowBlockM = 64;
constexpr int kSm90ConsumerRows = 64;  // wgmma's M: one warpgroup's query rows
constexpr int kSm90MaxStages = 8;

ATTNJIT_HD constexpr int sm90_consumer_warpgroups(int block_m) {
  return block_m / kSm90ConsumerRows;
}
// The block's threads: the producer warpgroup and the consumers.
ATTNJIT_HD constexpr int sm90_threads(int block_m) {
  return 128 * (1 + sm90_consumer_warpgroups(block_m));
}

// Schedule options of the kernel, a bit set template argument (host: KernelConfig::overlap,
// ::persistent; ATTNJIT_TUNE overrides the defaults for measurements).
constexpr unsigned kSm90FeatureOverlap = 1u;     // intra-warpgroup pipelining of S and softmax
constexpr unsigned kSm90FeaturePersistent = 2u;  // one block per SM walking the query tiles
constexpr unsigned kSm90FeaturePInSmem = 4u;     // P V with P from shared memory, not registers
constexpr unsigned kSm90FeatureTileHandoff = 8u;  // the producer tells the consumers each tile
// Bits 4..7: how many of each 8 n8 chunks of a score tile the softmax exponentiates on the FMA
// pipe (poly_exp2.cuh) instead of MUFU, 0..8.
constexpr unsigned kSm90FeaturePolyExp2Shift = 4u;
ATTNJIT_HD constexpr unsigned sm90_poly_exp2_feature(int eighths) {
  return static_cast<unsigned>(eighths) << kSm90FeaturePolyExp2Shift;
}
ATTNJIT_HD constexpr int sm90_poly_exp2_eighths(unsigned features) {
  return static_cast<int>((features >> kSm90FeaturePolyExp2Shift) & 15u);
}
// The softmax scale folded into the exponent's FFMA in three-consumer blocks too (two-consumer
// blocks always fold it; AttentionForward::apply_scores says why three do not by default).
constexpr unsigned kSm90FeatureFoldM192 = 256u;
// Two blocks per SM (two consumer warpgroups, plain blocks): consumers of 104 registers instead of
// 240, so that a block's start and end (Q's load, the first K, the epilogue) run under the other
// block's tiles, as the SM80 kernel's and Triton's several blocks per SM do for short rows.
constexpr unsigned kSm90FeatureTwoBlocksPerSm = 512u;
// Phase stamps into the host's per-block timeline records (sm90_timeline.cuh; plain blocks).
constexpr unsigned kSm90FeatureTimeline = 1024u;
// Split-KV (plain blocks): the row math's split features (AttentionForward's DECODING), so that a
// call of too few query tiles to fill the GPU (a prefill chunk over a long cache, a few heads per
// GPU) cuts each query tile's keys into slices, one block each, merged by the module's
// attnjit_split_combine (split_combine.cuh). A kernel of its own: the split features cost the
// consumers registers that the standard kernels keep.
constexpr unsigned kSm90FeatureSplitKv = 2048u;

// The split kernel's slices keep at least this many key tiles: a block of that kernel spends about
// 6-9 us outside its tiles (the H200's timeline fit, docs/PERFORMANCE.md) against 1.3-1.8 us a
// tile, so slices of 2 tiles (the sm80 kernel's kMinSplitTiles) would mostly pay that cost again.
// The host sizes uniform slices by it (choose_num_splits), the kernel balanced ones.
constexpr int kSm90MinSplitTiles = 4;

// TMA with the 128-byte swizzle writes 1024-byte swizzle atoms, and wgmma descriptors address
// them from 1024-byte aligned bases; dynamic shared memory is only promised 16-byte alignment, so
// the kernel rounds its base up and the launch asks for the slack.
constexpr int kSm90SmemAlignment = 1024;
// After the tiles: the Q barrier, then per stage K full, V full, K empty and V empty barriers
// (8 bytes each; K and V are handed over separately, as in FlashAttention-3).
constexpr int kSm90BarrierBytes = 8 + 4 * 8 * kSm90MaxStages;
// A persistent kernel's one more barrier after those: "Q empty", the consumers' release of the Q
// tile's space, so that the producer may load the next work item's Q there.
constexpr int kSm90PersistentBarrierBytes = 8;
// The split kernel's 16 more bytes of dynamic shared memory: with the slack's last 16, which hold
// a kernel's sequence words (attention_fwd_sm90.cuh, kSequenceWordsAt), they make the 32 bytes at
// the end that the aligned layout never reaches: the sequence words, and before them a balanced
// split's words (AttentionForward::balanced_split_words).
constexpr int kSm90SplitWordsBytes = 16;
// sm_90a's per-block opt-in limit of dynamic shared memory (227 KB).
constexpr int kSm90SharedMemoryLimit = 227 * 1024;

// Q tile (BLOCK_M x HEAD_DIM), then the K stages and the V stages (stages x BLOCK_N x HEAD_DIM
// each), all 16-bit elements; every tile is a whole number of 1024-byte atoms.
ATTNJIT_HD constexpr int sm90_qkv_bytes(int head_dim, int block_m, int block_n, int num_stages) {
  return 2 * head_dim * (block_m + 2 * num_stages * block_n);
}

// P in shared memory (kSm90FeaturePInSmem; FlashAttention-3's MmaPV_is_RS = false): each
// consumer writes its 64 x block_n tile of P there for P V to read as wgmma's A operand, which
// frees the registers P otherwise holds while P V runs. In 128-byte-swizzled boxes of 64 keys,
// so block_n must be a multiple of 64.
ATTNJIT_HD constexpr int sm90_p_bytes(int block_m, int block_n, bool p_in_smem) {
  return p_in_smem ? 2 * block_m * block_n : 0;
}

// The output is staged (normalised, converted, swizzled for 16-byte stores) in a tile of Q's
// shape. A plain kernel stages it in Q's own space. A persistent one gets a staging area of its
// own where it fits (head dims 64 and 128 at the default tiles, not 256), so that the next work
// item's Q can land while the epilogue of the current one still runs; where it does not fit, the
// output stays in Q's space and Q is released after the epilogue.
ATTNJIT_HD constexpr bool sm90_output_staged_apart(int head_dim, int block_m, int block_n,
                                                   int num_stages, bool persistent,
                                                   bool p_in_smem = false) {
  return persistent && kSm90SmemAlignment + sm90_qkv_bytes(head_dim, block_m, block_n, num_stages) +
                               sm90_p_bytes(block_m, block_n, p_in_smem) +
                               2 * head_dim * block_m + kSm90BarrierBytes +
                               kSm90PersistentBarrierBytes <=
                           kSm90SharedMemoryLimit;
}

// [slack][Q][K stages][V stages][output staging, when apart][P, when in shared memory][barriers]
// [Q empty, when persistent][the split kernel's words].
ATTNJIT_HD constexpr int sm90_forward_smem_bytes(int head_dim, int block_m, int block_n,
                                                 int num_stages, bool persistent,
                                                 bool p_in_smem = false, bool split_kv = false) {
  return kSm90SmemAlignment + sm90_qkv_bytes(head_dim, block_m, block_n, num_stages) +
         (sm90_output_staged_apart(head_dim, block_m, block_n, num_stages, persistent, p_in_smem)
              ? 2 * head_dim * block_m
              : 0) +
         sm90_p_bytes(block_m, block_n, p_in_smem) + kSm90BarrierBytes +
         (persistent ? kSm90PersistentBarrierBytes : 0) + (split_kv ? kSm90SplitWordsBytes : 0);
}

}  // namespace attnjit
