// Tile configuration of the forward kernel per arch and head dim (see docs/KERNELS.md).
#include <algorithm>
#include <array>
#include <span>

#include "attnjit/fwd_config.cuh"
#include "attnjit/sm90_fwd_config.cuh"
#include "codegen/residency.hpp"
#include "codegen/variant_source.hpp"
#include "common/error.hpp"

namespace attnjit::codegen {
namespace {

static_assert(shared_memory_limit(90) == kSm90SharedMemoryLimit,
              "the sm90 kernel's own shared-memory budget (sm90_fwd_config.cuh) is sm_90's");

struct TileShape {
  int head_dim;
  int block_m;
  int block_n;
  int num_warps;
};

// Each warp owns 16 query rows (block_m = 16 * num_warps): with 16 rows per warp the O and S
// accumulators of every head dim stay well inside 255 registers without spills.
constexpr std::array<TileShape, 5> kShapes{{
    {32, 128, 64, 8},
    {64, 128, 64, 8},
    {96, 128, 64, 8},
    {128, 128, 64, 8},
    {256, 64, 64, 4},
}};

constexpr int kMaxStages = 3;

}  // namespace

bool is_supported_head_dim(int head_dim) {
  for (const TileShape& shape : kShapes) {
    if (shape.head_dim == head_dim) return true;
  }
  return false;
}

namespace {

// The SM80 kernel's shape with ATTNJIT_TUNE's sm80 overrides. The parser bounds each value
// (multiples of 16, at most 16 warps); checked here: whole 16-row m-tiles per warp and the shared
// memory, errors that name the keys. A shape the tile loaders cannot divide among the threads
// (copy.cuh) still fails, in NVRTC, with that static_assert's message.
KernelConfig tuned_sm80_config(int sm, int head_dim, KernelConfig config,
                               const KernelTuning& tuning) {
  config.block_m = tuning.sm80_block_m.value_or(config.block_m);
  config.block_n = tuning.sm80_block_n.value_or(config.block_n);
  config.num_warps = tuning.sm80_warps.value_or(config.num_warps);
  config.num_stages = tuning.sm80_stages.value_or(config.num_stages);
  config.blocks_per_sm = tuning.sm80_blocks_per_sm.value_or(config.blocks_per_sm);
  if (config.block_m % (16 * config.num_warps) != 0) {
    throw_error(Status::invalid_argument,
                "ATTNJIT_TUNE: sm80_block_m {} is not a whole number of 16-row tiles for each of "
                "{} warps",
                config.block_m, config.num_warps);
  }
  // Note: several blocks per SM without sm80_stages take the most stages (up to the default)
  // whose shared memory fits that many blocks: 3 stages of 64-row blocks at head dim 128 take
  // 115 KB, two of which fit an H100's 228 KB but not an A100's 164 (which then gets 2 stages).
  const auto fits = [&](int stages) {
    return blocks_by_shared_memory(
               sm, forward_smem_bytes(head_dim, config.block_m, config.block_n, stages)) >=
           config.blocks_per_sm;
  };
  if (!tuning.sm80_stages) {
    while (config.num_stages > 2 && !fits(config.num_stages)) --config.num_stages;
  }
  config.smem_bytes =
      forward_smem_bytes(head_dim, config.block_m, config.block_n, config.num_stages);
  if (config.smem_bytes > shared_memory_limit(sm)) {
    throw_error(Status::invalid_argument,
                "ATTNJIT_TUNE: head dim {} with sm80_block_m={}, sm80_block_n={} and "
                "sm80_stages={} needs {} bytes of shared memory; sm_{} allows {}",
                head_dim, config.block_m, config.block_n, config.num_stages, config.smem_bytes,
                sm, shared_memory_limit(sm));
  }
  if (!fits(config.num_stages)) {
    throw_error(Status::invalid_argument,
                "ATTNJIT_TUNE: sm80_blocks_per_sm={} needs shared memory for {} blocks of {} "
                "bytes (head dim {}, sm80_block_m={}, sm80_block_n={}, sm80_stages={}); an SM "
                "of sm_{} has {}",
                config.blocks_per_sm, config.blocks_per_sm, config.smem_bytes, head_dim,
                config.block_m, config.block_n, config.num_stages, sm, shared_memory_per_sm(sm));
  }
  return config;
}

// The decoding entry's blocks of `block_n`-key tiles and `stages` stages that fit one SM at
// once: at most 4, since 4 blocks of 64 threads leave ptxas its 255 registers a thread.
int decode_residency(int sm, int head_dim, int block_n, int stages) {
  return std::min(4, blocks_by_shared_memory(
                        sm, forward_smem_bytes(head_dim, kDecodeBlockM, block_n, stages)));
}

// The decoding entry's tiles: the first of the candidates (key tiles, stages) with 3 blocks
// resident per SM (their loads in flight keep an SM's share of the memory bandwidth busy while
// each block's one real warp computes; docs/PERFORMANCE.md, "The decoding entry"); when none
// reaches 3 (the 100 KB SMs), the last. At head dim 256 the key tiles are 16 rows: with 32 the
// 64 threads' tile loads took ptxas past 255 registers (document mask, sm_90: 20-24 bytes of
// spills in 2 stages, 4 in 3). ATTNJIT_TUNE's decode_block_n and decode_stages replace the
// choice.
void choose_decode_tiles(int sm, int head_dim, const KernelTuning& tuning, KernelConfig& config) {
  constexpr int kWantedResidency = 3;
  constexpr int kCandidates[][2] = {{64, 3}, {64, 2}, {32, 3}, {32, 2}};
  constexpr int kWideCandidates[][2] = {{16, 3}, {16, 2}};
  const std::span<const int[2]> candidates =
      head_dim >= 256 ? std::span<const int[2]>(kWideCandidates)
                      : std::span<const int[2]>(kCandidates);
  int block_n = candidates.back()[0];
  int stages = candidates.back()[1];
  for (const auto& [n, s] : candidates) {
    if (decode_residency(sm, head_dim, n, s) >= kWantedResidency) {
      block_n = n;
      stages = s;
      break;
    }
  }
  block_n = tuning.decode_block_n.value_or(block_n);
  stages = tuning.decode_stages.value_or(stages);
  const int residency = decode_residency(sm, head_dim, block_n, stages);
  if (residency < 1) {
    throw_error(Status::invalid_argument,
                "ATTNJIT_TUNE: head dim {} with decode_block_n={} and decode_stages={} needs {} "
                "bytes of shared memory; sm_{} allows {}",
                head_dim, block_n, stages,
                forward_smem_bytes(head_dim, kDecodeBlockM, block_n, stages), sm,
                shared_memory_limit(sm));
  }
  config.decode_block_n = block_n;
  config.decode_stages = stages;
  config.decode_blocks_per_sm = residency;
  config.decode_smem_bytes = forward_smem_bytes(head_dim, kDecodeBlockM, block_n, stages);
}

}  // namespace

KernelConfig decode_config(const KernelConfig& config) {
  if (config.family != KernelFamily::sm80 || config.decode_block_n <= 0) {
    throw_error(Status::internal, "the kernel has no decoding entry");
  }
  KernelConfig decode;
  decode.block_m = kDecodeBlockM;
  decode.block_n = config.decode_block_n;
  decode.num_warps = kDecodeWarps;
  decode.num_stages = config.decode_stages;
  decode.blocks_per_sm = config.decode_blocks_per_sm;
  decode.smem_bytes = config.decode_smem_bytes;
  return decode;
}

KernelConfig choose_kernel_config(int sm, DType dtype, int head_dim, const KernelTuning& tuning) {
  if (sm < 80) {
    throw_error(Status::unsupported,
                "attention kernels need compute capability 8.0 or newer; got sm_{}", sm);
  }
  if (dtype != DType::bf16 && dtype != DType::fp16) {
    throw_error(Status::unsupported,
                "query, key and value must be bfloat16 or float16; got {}", dtype_name(dtype));
  }
  const TileShape* shape = nullptr;
  for (const TileShape& candidate : kShapes) {
    if (candidate.head_dim == head_dim) shape = &candidate;
  }
  if (shape == nullptr) {
    throw_error(Status::unsupported, "head dim {} is not supported; supported: 32, 64, 96, 128, 256",
                head_dim);
  }
  const int limit = shared_memory_limit(sm);
  // Deepest pipeline that fits; when even two stages do not fit, halve the key tile.
  for (int block_n = shape->block_n; block_n >= 32; block_n /= 2) {
    for (int stages = kMaxStages; stages >= 2; --stages) {
      const int bytes = forward_smem_bytes(head_dim, shape->block_m, block_n, stages);
      if (bytes <= limit) {
        KernelConfig config;
        config.block_m = shape->block_m;
        config.block_n = block_n;
        config.num_warps = shape->num_warps;
        config.num_stages = stages;
        config.smem_bytes = bytes;
        // Two blocks per SM only for head dim 32, whose kernels need under 128 registers at
        // 256 threads (measured, docs/KERNELS.md); larger head dims would spill under a
        // 128-register cap, so they promise one block and ptxas may use up to 255.
        config.blocks_per_sm = head_dim <= 32 ? 2 : 1;
        if (has_decoding_features(head_dim)) choose_decode_tiles(sm, head_dim, tuning, config);
        // Note: the defaults pass every check below, so an override is what can fail them.
        return tuned_sm80_config(sm, head_dim, config, tuning);
      }
    }
  }
  throw_error(Status::internal, "no tile configuration of head dim {} fits sm_{}", head_dim, sm);
}

// Note: 1.10x the plain schedule's geometric mean over the 7 standard variants at head dims 64
// and 128 on an H200 (every variant 1.06-1.20x), 1.04-1.06x at 256 (docs/PERFORMANCE.md,
// "Measured on an H200").
bool sm90_overlap_by_default(int /*head_dim*/) { return true; }

namespace {

// The tiles a variant gets when ATTNJIT_TUNE does not say, by head dim and whether it has a mask,
// each the fastest measured on an H200 (docs/PERFORMANCE.md, "Tiles per variant class"):
// without a mask every key tile is full and kept, so wider tiles only spread the per-tile cost
// (FlashAttention-3's 128 x 176 at D=128 and 128 x 80 at D=256: noop 1.02x and 1.12x, soft-cap
// 1.05x and 1.08x), and at D=64 a third consumer warpgroup hides more of the softmax (noop 1.13x,
// ALiBi 1.10x). With a mask they lose: a wider tile cuts more partial tiles out of a band or a
// document boundary (176 keys: sliding window 0.75x, document 0.70x; 192 rows at D=64: 0.68-0.84x),
// so masked variants keep 128 x 128 (64 keys at 256, where two 128-key stages do not fit).
struct Sm90Tiles {
  int block_m;
  int block_n;
};

Sm90Tiles sm90_default_tiles(int head_dim, bool masked) {
  if (head_dim == 64) return masked ? Sm90Tiles{kSm90BlockM, 128} : Sm90Tiles{kSm90WideBlockM, 128};
  if (head_dim == 128) return Sm90Tiles{kSm90BlockM, masked ? 128 : 176};
  return Sm90Tiles{kSm90BlockM, masked ? 64 : 80};
}

}  // namespace

std::optional<KernelTuning> sm90_base_tiles_tuning(const KernelConfig& config, int head_dim,
                                                   const KernelTuning& tuning) {
  if (config.family != KernelFamily::sm90 || changes_schedule(tuning)) return std::nullopt;
  const Sm90Tiles base = sm90_default_tiles(head_dim, /*masked=*/true);
  if (config.block_m == base.block_m && config.block_n == base.block_n) return std::nullopt;
  KernelTuning narrower = tuning;
  narrower.sm90_block_m = base.block_m;
  narrower.sm90_block_n = base.block_n;
  return narrower;
}

KernelConfig sm90_kernel_config(int head_dim, const KernelTuning& tuning, bool masked,
                                bool special_score) {
  if (head_dim % 64 != 0 || head_dim > 256) {
    throw_error(Status::internal, "the sm90 kernel has no configuration for head dim {}", head_dim);
  }
  // Key rows per stage: 128 while two stages of K and V fit beside Q (D = 64, 128), else 64.
  // Note: N of S = Q K^T is block_n, and N of O += P V is the head dim; both are wgmma shapes.
  KernelConfig config;
  config.family = KernelFamily::sm90;
  // Note: an explicit tile option starts from the base tiles (a masked variant's), so that
  // ATTNJIT_TUNE means the same kernel for every variant.
  const bool tiles_tuned = tuning.sm90_block_m || tuning.sm90_block_n || tuning.sm90_p_smem ||
                           tuning.sm90_stages || tuning.sm90_persistent ||
                           tuning.sm90_blocks_per_sm;
  const Sm90Tiles tiles = sm90_default_tiles(head_dim, masked || tiles_tuned);
  config.block_m = tuning.sm90_block_m.value_or(tiles.block_m);
  // Note: three consumer warpgroups get 160 registers per thread (setmaxnreg), which hold O, S
  // and P at head dim 64; at 128 only with P in shared memory (FA3's "192 x 128 without RS"):
  // with P in registers 12 of the 14 standard variant x overlap kernels spill there, and at 256
  // ptxas cannot compile it (ptxas -v, docs/KERNELS.md), so the option would only measure spills.
  const bool p_in_smem = tuning.sm90_p_smem.value_or(false);
  if (config.block_m == kSm90WideBlockM && head_dim != 64 && !(head_dim == 128 && p_in_smem)) {
    throw_error(Status::invalid_argument,
                "ATTNJIT_TUNE: sm90_block_m=192 is for head dim 64, or 128 with sm90_p_smem=1; "
                "at head dim {}{} the consumers' 160 registers per thread spill",
                head_dim, head_dim == 128 ? " with P in registers" : "");
  }
  // One consumer warpgroup (64 rows): for two blocks per SM at head dims 64 and 128, where two
  // consumers' registers would not fit twice. Its P stays in registers and its blocks are plain,
  // the configurations the emulator and kernel_resources_test cover.
  const bool narrow = config.block_m == kSm90NarrowBlockM;
  if (narrow && (head_dim > 128 || p_in_smem || tuning.sm90_persistent.value_or(false))) {
    throw_error(Status::invalid_argument,
                "ATTNJIT_TUNE: sm90_block_m=64 is for head dims 64 and 128, with P in registers "
                "and plain blocks; got head dim {}, sm90_p_smem={}, sm90_persistent={}",
                head_dim, p_in_smem ? 1 : 0, tuning.sm90_persistent.value_or(false) ? 1 : 0);
  }
  config.blocks_per_sm = tuning.sm90_blocks_per_sm.value_or(1);
  const bool two_per_sm = config.blocks_per_sm == 2;
  // Note: two blocks of two consumers default to what their 104-register consumers hold without
  // spilling: 64-key stages, no overlap (with it the short-row variants spill 48 bytes). Two
  // blocks of one consumer keep 232 registers and the overlap, with stages that fit twice: 128
  // keys at head dim 64, 64 at 128.
  const int two_per_sm_block_n = narrow && head_dim == 64 ? 128 : 64;
  config.block_n = tuning.sm90_block_n.value_or(two_per_sm ? two_per_sm_block_n : tiles.block_n);
  config.num_warps = sm90_threads(config.block_m) / 32;
  config.num_stages = tuning.sm90_stages.value_or(2);
  config.overlap = tuning.sm90_overlap.value_or((!two_per_sm || narrow) &&
                                                sm90_overlap_by_default(head_dim));
  config.persistent = tuning.sm90_persistent.value_or(false);
  config.p_in_smem = p_in_smem;
  // The tile handoff is the default for masked kernels of the default tiles: on an H100
  // 1.08-1.09x for a sliding window and 64 documents at head dim 128, 1.04-1.09x for the window
  // and 8 documents at 64, causal 0.99-1.01x (docs/PERFORMANCE.md, "Fifteenth session").
  // Without a mask every tile is kept: nothing to hand over. Tuned tiles take it only when asked
  // (sm90_handoff=1): with two-consumer blocks two per SM the causal kernel spills 4 bytes.
  const bool handoff_fits = !config.persistent && 2 * config.num_stages <= kSm90MaxStages;
  config.tile_handoff = tuning.sm90_handoff.value_or(masked && !tiles_tuned && handoff_fits);
  if (config.tile_handoff && !handoff_fits) {
    throw_error(Status::invalid_argument,
                "ATTNJIT_TUNE: sm90_handoff=1 needs plain blocks and at most {} stages (its words "
                "use the barrier slots the stages leave free); got sm90_persistent={}, "
                "sm90_stages={}",
                kSm90MaxStages / 2, config.persistent ? 1 : 0, config.num_stages);
  }
  config.poly_exp2 = tuning.sm90_poly_exp2.value_or(0);
  // The scale folded into the exponent in 192-row blocks: the default without a mask (the
  // masked 192-row kernels spill 68-92 bytes with it) unless the score calls special functions.
  // On an H100 at head dim 64: noop 1.05x, ALiBi 1.14-1.18x, soft-capping 0.95x (twice each;
  // docs/PERFORMANCE.md, "Fifteenth session").
  // Note: only where it changes the kernel, so that two-consumer kernels keep one cache key.
  config.fold_m192 = config.block_m == kSm90WideBlockM &&
                     tuning.sm90_fold_m192.value_or(!masked && !special_score);
  config.watchdog_ms = tuning.sm90_watchdog_ms.value_or(0);
  config.timeline = tuning.sm90_timeline.value_or(false);
  if (config.timeline && config.persistent) {
    throw_error(Status::invalid_argument,
                "ATTNJIT_TUNE: sm90_timeline=1 records one work item per block, so it needs plain "
                "blocks, not sm90_persistent=1");
  }
  if (config.p_in_smem && config.block_n % 64 != 0) {
    throw_error(Status::invalid_argument,
                "ATTNJIT_TUNE: sm90_p_smem=1 needs sm90_block_n a multiple of 64 (P is stored in "
                "64-key boxes), not {}",
                config.block_n);
  }
  // Note: a persistent kernel adds its output staging area only where it fits (see
  // sm90_output_staged_apart), so the persistent flag alone never makes a configuration too big.
  config.smem_bytes = sm90_forward_smem_bytes(head_dim, config.block_m, config.block_n,
                                              config.num_stages, config.persistent,
                                              config.p_in_smem);
  if (two_per_sm) {
    // Note: two consumers' 104 registers hold O (32 at head dim 64), S and P of a 64-key tile
    // and the row state; with a wider tile or at head dim 128 ptxas gives up. One consumer keeps
    // 232 (kernel_resources_test).
    const bool two_consumers_fit =
        config.block_m == kSm90BlockM && head_dim == 64 && config.block_n == 64;
    if (!(narrow || two_consumers_fit) || config.persistent ||
        blocks_by_shared_memory(90, config.smem_bytes) < 2) {
      throw_error(Status::invalid_argument,
                  "ATTNJIT_TUNE: sm90_blocks_per_sm=2 needs plain blocks with shared memory for "
                  "two ({} bytes a block, an SM has {}) and either sm90_block_m=64 (head dim 64 "
                  "or 128) or sm90_block_m=128 with sm90_block_n=64 at head dim 64; got head dim "
                  "{}, sm90_block_m={}, sm90_block_n={}, sm90_persistent={}",
                  config.smem_bytes, shared_memory_per_sm(90), head_dim, config.block_m,
                  config.block_n, config.persistent ? 1 : 0);
    }
  }
  if (config.smem_bytes > shared_memory_limit(90)) {
    throw_error(Status::invalid_argument,
                "ATTNJIT_TUNE: head dim {} with sm90_block_m={}, sm90_block_n={}, sm90_stages={}, "
                "sm90_persistent={} and sm90_p_smem={} needs {} bytes of shared memory; sm_90a "
                "allows {}",
                head_dim, config.block_m, config.block_n, config.num_stages,
                config.persistent ? 1 : 0, config.p_in_smem ? 1 : 0, config.smem_bytes,
                shared_memory_limit(90));
  }
  return config;
}

}  // namespace attnjit::codegen
