// Shape and shared-memory footprint of the Hopper forward kernel (attention_fwd_sm90.cuh), used by
// the kernel itself and by the host's configuration choice (codegen/kernel_config.cpp), so both
// agree on the launch size.
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

// Warpgroup 0 produces (TMA), warpgroups 1 and 2 consume, 64 query rows each.
constexpr int kSm90Warpgroups = 3;
constexpr int kSm90Threads = 128 * kSm90Warpgroups;
constexpr int kSm90BlockM = 128;
constexpr int kSm90MaxStages = 8;

// Schedule options of the kernel, a bit set template argument (host: KernelConfig::overlap,
// ::persistent; ATTNJIT_TUNE overrides the defaults for measurements).
constexpr unsigned kSm90FeatureOverlap = 1u;     // intra-warpgroup pipelining of S and softmax
constexpr unsigned kSm90FeaturePersistent = 2u;  // one block per SM walking the query tiles

// TMA with the 128-byte swizzle writes 1024-byte swizzle atoms, and wgmma descriptors address
// them from 1024-byte aligned bases; dynamic shared memory is only promised 16-byte alignment, so
// the kernel rounds its base up and the launch asks for the slack.
constexpr int kSm90SmemAlignment = 1024;
// After the tiles: the Q barrier, then full and empty barriers per stage (8 bytes each).
constexpr int kSm90BarrierBytes = 8 + 2 * 8 * kSm90MaxStages;

// [slack][Q tile: BLOCK_M x HEAD_DIM][K: stages x BLOCK_N x HEAD_DIM][V: the same][barriers], all
// 16-bit elements; every tile is a whole number of 1024-byte atoms. The output is staged in Q's
// space.
ATTNJIT_HD constexpr int sm90_forward_smem_bytes(int head_dim, int block_n, int num_stages) {
  return kSm90SmemAlignment + 2 * head_dim * (kSm90BlockM + 2 * num_stages * block_n) +
         kSm90BarrierBytes;
}

}  // namespace attnjit
