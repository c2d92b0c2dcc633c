// FlashAttention-3 style forward for sm_90a (Hopper) over the same variant struct as the SM80
// kernel (attention_fwd.cuh): wgmma from shared memory, TMA loads completing on mbarriers, and warp
// specialisation (Shah et al., 2024, "FlashAttention-3", Algorithm 1).
//
// One thread block of 1 + BLOCK_M / 64 warpgroups computes BLOCK_M queries of one (batch, query
// head), the same work assignment as the SM80 kernel (head-major, heavy query tiles first); by
// default BLOCK_M = 128 (3 warpgroups, 384 threads), with ATTNJIT_TUNE=sm90_block_m=192 four
// (512 threads: FlashAttention-3's tile for head dim 64, two consumers' softmax under one's GEMMs):
//   warpgroup 0, the producer, gives most of its registers back (setmaxnreg) and one elected lane
//     of its first warp issues every TMA load: the Q tile once, then each key tile's K and V into
//     a NUM_STAGES ring of shared-memory stages, K of the next kept tile before V of the current
//     one. K and V of a stage are handed over separately (FA3's two pipelines), each through two
//     mbarriers: `full` (the producer's arrive.expect_tx plus the bytes TMA completes on it) and
//     `empty` (one arrival from each consumer thread once they are done reading it: K's once S
//     has completed, V's once P V has).
//   warpgroups 1 .. BLOCK_M / 64, the consumers, take the registers and each own 64 query rows
//     (consumer c rows 64 c .. 64 c + 63): per stage,
//     S = Q K^T (wgmma, both operands from shared memory, N = BLOCK_N), the score hook, bounds and
//     mask and the online softmax in registers, P converted in registers to wgmma's A fragment,
//     O += P V (wgmma with A from registers, V read MN-major, N = HEAD_DIM), then the stage's
//     release. (With kSm90FeaturePInSmem, P goes to the consumer's P tile in shared memory and
//     P V reads it from there, which frees P's registers; see make_p.) The consumers take turns
//     issuing their GEMMs, round robin (ping-pong, GemmTurns), so the others' softmax runs under
//     one's GEMMs. The epilogue normalises O and writes it and
//     the LSE.
// The producer and every consumer warp walk the same sequence of key tiles (KeptTiles): each
// classifies the tiles itself, 32 at a time with one ballot, so no message passes between them
// and the i-th stage always holds the i-th kept tile; the empty tiles of a mask are never loaded.
//
// Everything per row (block assignment, hoisted variant values, scores, fully masked rows, NaN
// propagation, output staging) is the SM80 kernel's own code, instantiated for BLOCK_M / 16 warps
// of 16 rows: wgmma's accumulator D(64 x N) of warpgroup c gives warp w rows 16 w .. 16 w + 15 in
// the mma.sync m16n8 C layout repeated over N / 8 column chunks (PTX ISA, "Register Fragments" of
// wgmma .m64nNk16), which is exactly that kernel's fragment of consumer warp 4 c + w with one
// m-tile. So both kernels compute the same function by construction.
//
// Persistent schedule (FEATURES & kSm90FeaturePersistent; FA3's persistent kernel): the host
// launches min(work items, SMs) blocks, and block i computes work items i, i + gridDim, ... in the
// order plain blocks are assigned (RowMath::assign_work), so that each block's prologue and
// epilogue hide under the work around them: the K/V stage ring (stage, phase parity) runs on
// across items, the Q barrier's parity flips per item, and a "Q empty" barrier (one arrival per
// consumer thread) tells the producer when it may load the next item's Q. The producer issues the
// next item's first K, then waits for Q's space, so both land while the consumers finish the
// current item. Each item's GEMM turns are balanced on their own (GemmTurns).
//
// Shared memory (sm90_fwd_config.cuh): the base rounded up to 1024 bytes, then the Q tile, the K
// stages, the V stages, the output staging area of a persistent kernel where it fits
// (sm90_output_staged_apart; otherwise the output is staged in Q's space), the barriers, and a
// persistent kernel's Q empty barrier. Each tile is HEAD_DIM / 64 TMA boxes of [rows][64] 16-bit
// elements with the 128-byte swizzle (sm90_tma.cuh), i.e. SwizzledTile<rows, HEAD_DIM> of
// copy.cuh, which is what the wgmma descriptors (sm90_wgmma.cuh) and the output staging address.
#pragma once

#include "attnjit/attention_fwd.cuh"
#include "attnjit/grid_dependency.cuh"
#include "attnjit/sm90_barrier.cuh"
#include "attnjit/sm90_fwd_config.cuh"
#include "attnjit/sm90_fwd_params.cuh"
#include "attnjit/sm90_timeline.cuh"
#include "attnjit/sm90_tma.cuh"
#include "attnjit/sm90_wgmma.cuh"

namespace attnjit {

#if ATTNJIT_KERNEL_CODE

template <typename VARIANT, typename ELEM, int HEAD_DIM, int BLOCK_M, int BLOCK_N, int NUM_STAGES,
          unsigned FEATURES>
struct AttentionForwardSm90 {
  static_assert(HEAD_DIM == 64 || HEAD_DIM == 128 || HEAD_DIM == 256,
                "the sm90 kernel's head dims: whole 64-column TMA boxes, a wgmma N for P V");
  static_assert(BLOCK_N % 16 == 0 && BLOCK_N >= 64 && BLOCK_N <= 256,
                "key tiles are a wgmma N for S = Q K^T, whole k16 steps of P V, whole swizzle "
                "atoms and one TMA box (at most 256 rows)");
  static_assert(NUM_STAGES >= 2 && NUM_STAGES <= kSm90MaxStages, "see kSm90BarrierBytes");
  static_assert(BLOCK_M == kSm90NarrowBlockM || BLOCK_M == kSm90BlockM ||
                    BLOCK_M == kSm90WideBlockM,
                "one, two or three consumer warpgroups of 64 rows (a TMA box: at most 256 rows)");

  static constexpr int kConsumerWarpgroups = sm90_consumer_warpgroups(BLOCK_M);
  static constexpr int kConsumerThreads = 128 * kConsumerWarpgroups;
  static constexpr bool kPersistent = (FEATURES & kSm90FeaturePersistent) != 0u;
  static constexpr bool kPInSmem = (FEATURES & kSm90FeaturePInSmem) != 0u;
  static_assert(!kPInSmem || BLOCK_N % 64 == 0, "P in shared memory: whole 64-key boxes");
  static constexpr bool kOutputApart =
      sm90_output_staged_apart(HEAD_DIM, BLOCK_M, BLOCK_N, NUM_STAGES, kPersistent, kPInSmem);
  static constexpr int kConsumerWarps = kConsumerThreads / 32;
  // Whether the softmax scale is folded into the exponent (RowMath::apply_scores says why not
  // at 160 registers; kSm90FeatureFoldM192 asks for it there too).
  static constexpr bool kFoldScale =
      kConsumerWarpgroups <= 2 || (FEATURES & kSm90FeatureFoldM192) != 0u;
  // Of each 8 n8 chunks of S, how many the softmax exponentiates on the FMA pipe (poly_exp2.cuh).
  static constexpr int kPolyExp2 = sm90_poly_exp2_eighths(FEATURES);
  static_assert(kPolyExp2 <= 8, "sm90_poly_exp2: 0 to 8 of each 8 chunks");
  // Split-KV (kSm90FeatureSplitKv): the row math's split features, plain blocks only (a block's
  // slice is its grid index's: RowMath::slot_of_block).
  static constexpr bool kSplitKv = (FEATURES & kSm90FeatureSplitKv) != 0u;
  static_assert(!kSplitKv || !kPersistent, "split-KV: plain blocks");
  static constexpr int kSmemBytes = sm90_forward_smem_bytes(HEAD_DIM, BLOCK_M, BLOCK_N, NUM_STAGES,
                                                            kPersistent, kPInSmem, kSplitKv);
  // A kernel with sequence tables keeps its block's sequence words (RowMath::sequence_word) in
  // the last 16 bytes of the dynamic shared memory, which the aligned layout never reaches: the
  // base is at least 16-byte aligned, so its padding is at most kSm90SmemAlignment - 16 bytes of
  // the kSm90SmemAlignment the launch adds for it. The split kernel's kSm90SplitWordsBytes more
  // keep the 16 bytes before them free too, for a balanced split's words (RowMath::
  // balanced_split_words).
  static constexpr int kSequenceWordsAt = kSmemBytes - 16;
  static_assert(4 * kSequenceWords <= 16 && 4 * kBalancedSplitWords <= kSm90SplitWordsBytes,
                "the sequence's words fit the last 16 bytes, a balanced split's the 16 before");
  // The SM80 kernel's per-block state and row math for the consumer warps (see the header).
  // The split kernel also runs packed GQA calls of several queries (FwdParams::pack_gqa; Q's
  // box in load_q).
  using RowMath =
      AttentionForward<VARIANT, ELEM, HEAD_DIM, BLOCK_M, BLOCK_N, kConsumerWarps, NUM_STAGES,
                       /*DECODING=*/kSplitKv, false, kSequenceWordsAt, /*PACKED_QUERIES=*/kSplitKv,
                       kSm90MinSplitTiles>;
  static_assert(RowMath::kMTiles == 1, "one m16 tile per consumer warp: the wgmma layout");
  static constexpr int kNTiles = BLOCK_N / 8;    // n8 chunks of S
  static constexpr int kDTiles = HEAD_DIM / 8;   // n8 chunks of O
  static constexpr int kBoxes = HEAD_DIM / 64;   // TMA boxes per tile
  // Note: a persistent producer issues its loads in a loop: unrolled, the box addresses of the
  // per-item work outgrew its 24 registers at head dim 256 (spills, ptxas -v); a loop of 4 costs
  // the one issuing lane nothing measurable.
  static constexpr int kBoxUnroll = kPersistent ? 1 : kBoxes;
  static constexpr int kQBoxBytes = BLOCK_M * 128;
  static constexpr int kKVBoxBytes = BLOCK_N * 128;
  static constexpr int kQBytes = kBoxes * kQBoxBytes;
  static constexpr int kKVBytes = kBoxes * kKVBoxBytes;
  static constexpr int kOutputOffset = kQBytes + 2 * NUM_STAGES * kKVBytes;
  // A consumer's P tile: 64 rows x BLOCK_N keys in 64-key boxes of 64 x 128 bytes (Q's layout).
  static constexpr int kPBoxBytes = kSm90ConsumerRows * 128;
  static constexpr int kPTileBytes = 2 * kSm90ConsumerRows * BLOCK_N;
  static constexpr int kPOffset = kOutputOffset + (kOutputApart ? kQBytes : 0);
  static constexpr int kTilesBytes = kPOffset + sm90_p_bytes(BLOCK_M, BLOCK_N, kPInSmem);
  static constexpr int kConsumerRowBytes = kSm90ConsumerRows * 128;  // a consumer's rows in a box
  static constexpr bool kOverlap = (FEATURES & kSm90FeatureOverlap) != 0u;
  // Tile handoff (kSm90FeatureTileHandoff): only the producer classifies the key tiles; it writes
  // each kept tile's index and class into a word beside its K stage before the stage's `full`
  // arrival (release; the consumers' wait acquires it), and after the last kept tile a word of
  // -1 with an arrival alone. The consumers then never evaluate the mask's tile bounds (for a
  // tensor mask: never load a summary), and the latency of finding a row's kept tiles is the
  // producer's, ahead of them by the stage ring. The words live in barrier slots that
  // NUM_STAGES leaves unused (stage s: the V empty slot of stage kSm90MaxStages - 1 - s). Not
  // with the persistent schedule: the end word takes a K stage that V's ring does not.
  static constexpr bool kHandoff = (FEATURES & kSm90FeatureTileHandoff) != 0u;
  static_assert(!kHandoff || (!kPersistent && 2 * NUM_STAGES <= kSm90MaxStages),
                "tile handoff: plain (not persistent) blocks, words in unused barrier slots");
  static_assert(kSm90SmemAlignment + kTilesBytes + kSm90BarrierBytes +
                        (kPersistent ? kSm90PersistentBarrierBytes : 0) +
                        (kSplitKv ? kSm90SplitWordsBytes : 0) ==
                    kSmemBytes,
                "host and device disagree on the shared-memory size");
  static_assert(kQBoxBytes % 1024 == 0 && kKVBoxBytes % 1024 == 0,
                "every box starts on a 1024-byte swizzle atom");

  // Two blocks per SM (kSm90FeatureTwoBlocksPerSm): the launch promises ptxas 2 resident blocks
  // (__launch_bounds__(384, 2)), and the consumers get what the smaller pool allows.
  static constexpr bool kTwoBlocksPerSm = (FEATURES & kSm90FeatureTwoBlocksPerSm) != 0u;
  // Phase stamps into the host's timeline records (sm90_timeline.cuh); plain blocks only.
  static constexpr bool kTimeline = (FEATURES & kSm90FeatureTimeline) != 0u;
  static_assert(!(kTimeline && kPersistent), "the timeline records one work item per block");
  static_assert(!kTwoBlocksPerSm || (kConsumerWarpgroups <= 2 && !kPersistent),
                "two blocks per SM: one or two consumer warpgroups, plain blocks");
  // One consumer warpgroup (BLOCK_M 64): plain blocks with P in registers (the host refuses the
  // rest), and no turns to take (GemmTurns).
  static_assert(kConsumerWarpgroups > 1 || (!kPersistent && !kPInSmem),
                "one consumer warpgroup: plain blocks, P in registers");
  static constexpr int kBlocksPerSm = kTwoBlocksPerSm ? 2 : 1;
  // Registers per thread after setmaxnreg (multiples of 8 in [24, 256]): two consumers get
  // 24 x 128 + 240 x 256 = 64512 of the SM's 65536; three get FlashAttention-3's split,
  // 32 x 128 + 160 x 384 = 65536. Note: a producer of 24 would not give the consumers more (168 x
  // 384 is over the file), so the producer takes the 8 left over. Two blocks per SM launch
  // with 80 registers a thread (65536 / 768, rounded down to 8): 30720 a block, of which
  // 24 x 128 + 104 x 256 = 29696. One consumer keeps 240 alone on the SM; two such blocks launch
  // with 128 (65536 / 512): 32768 a block, all of it 24 x 128 + 232 x 128.
  static constexpr int kProducerRegisters = kConsumerWarpgroups <= 2 ? 24 : 32;
  static constexpr int kConsumerRegisters =
      kConsumerWarpgroups == 1 ? (kTwoBlocksPerSm ? 232 : 240)
      : kTwoBlocksPerSm        ? 104
      : kConsumerWarpgroups == 2 ? 240
                                 : 160;
  // Whether a ragged partial tile evaluates the mask for every element, without a branch
  // (RowMath::MaskTest): where the consumers have 240 registers, up to head dim 128.
  static constexpr bool kRaggedMaskEvery = kConsumerRegisters >= 240 && HEAD_DIM <= 128;
  // Whether rows past q_len are masked (RowMath::apply_scores): not where the consumers have 240
  // registers nor without a mask (the 192-row blocks of the head-dim-64 defaults: a query length
  // of 16K is 85 1/3 of them), so that a query tile reaching past q_len is not ragged in every
  // key tile. Note: unmasked in the masked kernels of fewer registers, the short-rows kernel
  // spilled 16-28 bytes (causal, window) and the 192-row document kernel 8 (sm_90a, D=64).
  static constexpr bool kMaskRowsPastEnd = VARIANT::kHasMask && kConsumerRegisters < 240;
  // setmaxnreg moves registers within the block's pool, which the launch sized: ptxas's count
  // per thread (at most the file over the resident threads, a multiple of 8) times the threads.
  static constexpr int kLaunchRegisters = 65536 / (sm90_threads(BLOCK_M) * kBlocksPerSm) / 8 * 8;
  static_assert(128 * kProducerRegisters + kConsumerThreads * kConsumerRegisters <=
                    kLaunchRegisters * sm90_threads(BLOCK_M),
                "the block's register pool");
  // Named barriers (0 is __syncthreads): one per consumer warpgroup for its epilogue, and one per
  // consumer warpgroup for its turns on the tensor cores (GemmTurns); 1 + 2 x 3 ids of the 16.
  static constexpr unsigned kConsumerBarrier0 = 1;
  static constexpr unsigned kTurnBarrier0 = kConsumerBarrier0 + kConsumerWarpgroups;

  using Accumulators = float[1][kDTiles][4];
  using Scores = float[1][kNTiles][4];
  using PFragments = unsigned[kNTiles / 2][4];  // P as wgmma's A operand, one per key step

  const Sm90FwdParams& params;
  RowMath math;
  unsigned char* tiles;  // the aligned base: the Q tile
  unsigned q_smem = 0;   // its shared-window address

  ATTNJIT_DEVICE explicit AttentionForwardSm90(const Sm90FwdParams& p) : params(p), math(p.base) {}

  // ---- Shared-memory map.
  ATTNJIT_DEVICE unsigned k_stage(int stage) const { return q_smem + kQBytes + stage * kKVBytes; }
  ATTNJIT_DEVICE unsigned v_stage(int stage) const {
    return q_smem + kQBytes + (NUM_STAGES + stage) * kKVBytes;
  }
  ATTNJIT_DEVICE unsigned q_barrier() const { return q_smem + kTilesBytes; }
  // A stage's K and V have barriers of their own (FA3's pipeline_k and pipeline_v): S = Q K^T
  // waits only for K, and K's space is released as soon as S has completed, before P V.
  enum StageBarrier { kFullK = 0, kFullV = 1, kEmptyK = 2, kEmptyV = 3 };
  ATTNJIT_DEVICE unsigned stage_barrier(StageBarrier which, int stage) const {
    return q_smem + kTilesBytes + 8 + 8 * (kSm90MaxStages * static_cast<int>(which) + stage);
  }
  ATTNJIT_DEVICE unsigned q_empty_barrier() const {
    return q_smem + kTilesBytes + kSm90BarrierBytes;
  }
  // Tile handoff: the word of stage `stage` (see kHandoff), tile * 4 + class or -1 (no more).
  ATTNJIT_DEVICE unsigned char* tile_word(int stage) const {
    return tiles + (stage_barrier(kEmptyV, kSm90MaxStages - 1 - stage) - q_smem);
  }
  static constexpr int kNoMoreTiles = -1;
  // The tile a consumer takes from a K stage it waited for; false after the last one.
  ATTNJIT_DEVICE bool take_tile(int stage, int& tile, int& tile_class) const {
    const int word = static_cast<int>(load_shared_u32(tile_word(stage)));
    tile = word >> 2;
    tile_class = word & 3;
    return word != kNoMoreTiles;
  }

  // Where the i-th stage use of the block goes: the ring position and how often it wrapped (the
  // parity of the barrier phases), carried across work items by a persistent block.
  struct StageRing {
    int stage = 0;
    int round = 0;
    // The parity of the barrier phase this use of the stage completes.
    ATTNJIT_DEVICE unsigned parity() const { return static_cast<unsigned>(round & 1); }
    ATTNJIT_DEVICE void advance() {
      if (++stage == NUM_STAGES) {
        stage = 0;
        ++round;
      }
    }
  };

  // `value` unchanged, but opaque to the compiler from here on. A persistent consumer passes its
  // thread index and shared-memory base through it at every work item, so that what derives from
  // them (wgmma descriptors, fragment and staging offsets) is recomputed per item rather than
  // hoisted out of the item loop and held in registers across it: that spilled the accumulators
  // at head dims 128 and 256 (up to 104 bytes, ptxas -v).
  ATTNJIT_DEVICE static unsigned opaque(unsigned value) {
#if ATTNJIT_DEVICE_COMPILE
    asm volatile("" : "+r"(value));
#endif
    return value;
  }

  // A persistent block's work items in turn: every (gridDim.x * gridDim.y)-th from its own index
  // on. `count` is how many began, the per-item parity of the Q barriers.
  struct WorkItems {
    long long next_item =
        static_cast<long long>(blockIdx.y) * gridDim.x + static_cast<long long>(blockIdx.x);
    int count = 0;
    ATTNJIT_DEVICE bool next(RowMath& math) {
      if (!math.assign_work(next_item)) return false;
      next_item += static_cast<long long>(gridDim.x) * gridDim.y;
      ++count;
      return true;
    }
  };

  ATTNJIT_DEVICE void run() {
    if constexpr (kTimeline) {
      if (threadIdx.x == 0) start_timeline();
    }
    // Launched after the call's tensor summaries, the kernel may start while they still run
    // (grid_dependency.cuh); every thread waits for them before anything else. Nothing of ours
    // follows this kernel, so it lets no later launch start early.
    wait_for_prerequisite_grids();
    // Note: a persistent block assigns its items as it walks them, and one past the last item
    // (a grid larger than the work) just walks none.
    if constexpr (!kPersistent) {
      if (!math.assign_block()) return;
    }
    unsigned char* raw = attnjit_dynamic_smem;
    const unsigned raw_address = smem_address(raw);
    const unsigned pad = (kSm90SmemAlignment - raw_address % kSm90SmemAlignment) %
                         kSm90SmemAlignment;
    tiles = raw + pad;
    q_smem = raw_address + pad;
    math.q_tile = kOutputApart ? tiles + kOutputOffset : tiles;  // where store_output stages

    if (threadIdx.x == 0) {
      mbarrier_init(q_barrier(), 1);
      if constexpr (kPersistent) mbarrier_init(q_empty_barrier(), kConsumerThreads);
#pragma unroll
      for (int s = 0; s < NUM_STAGES; ++s) {
        mbarrier_init(stage_barrier(kFullK, s), 1);
        mbarrier_init(stage_barrier(kFullV, s), 1);
        mbarrier_init(stage_barrier(kEmptyK, s), kConsumerThreads);
        mbarrier_init(stage_barrier(kEmptyV, s), kConsumerThreads);
      }
      fence_mbarrier_init();
    }
    __syncthreads();
    if constexpr (kTimeline) {
      if (threadIdx.x == 0) stamp(kStampSetupDone);
    }

    const int warpgroup = static_cast<int>(threadIdx.x) / 128;
    if (warpgroup == 0) {
      warpgroup_reg_dealloc<kProducerRegisters>();
      // Note: the producer's other three warps have nothing to do and leave; nothing after this
      // point waits for the whole block.
      if (threadIdx.x / 32 == 0) produce();
    } else {
      warpgroup_reg_alloc<kConsumerRegisters>();
      consume(warpgroup - 1);
    }
  }

  // The key tiles a warp's lanes classify together: the next non-empty one from `tile` on and
  // its class (full: no mask evaluation), or num_kv_tiles when none is left. Called by all 32
  // lanes of a warp with the same arguments (warp-uniform), as the ballots need.
  struct KeptTiles {
    int begin = -32;  // the classified window is [begin, begin + 32)
    unsigned nonempty = 0;
    unsigned full = 0;

    ATTNJIT_DEVICE int next(const RowMath& math, int tile, int lane, int& tile_class) {
      if constexpr (!VARIANT::kHasMask) {
        tile_class = kTileFull;
        return min(tile, math.num_kv_tiles);
      } else {
        while (tile < math.num_kv_tiles) {
          if (tile < begin || tile >= begin + 32) {
            // After a window with no kept tile, the next 32 stretches of 32 tiles in one step
            // (lane l: [tile + 32 l, tile + 32 l + 32)).
            if (begin >= 0 && nonempty == 0u) {
              tile = skip_empty_chunks(math, tile, lane);
              if (tile >= math.num_kv_tiles) break;
            }
            begin = tile;
            const int mine = tile + lane;
            const int c = mine < math.num_kv_tiles ? math.classify(mine)
                                                   : static_cast<int>(kTileEmpty);
            nonempty = __ballot_sync(0xffffffffu, c != kTileEmpty);
            full = __ballot_sync(0xffffffffu, c == kTileFull);
          }
          const int offset = tile - begin;
          const unsigned ahead = nonempty >> offset;
          if (ahead != 0u) {
            const int found = offset + __ffs(static_cast<int>(ahead)) - 1;
            tile_class = (full >> found) & 1u ? kTileFull : kTilePartial;
            return begin + found;
          }
          tile = begin + 32;
        }
        tile_class = kTileEmpty;
        return math.num_kv_tiles;
      }
    }

    // The first tile >= `tile` of the first 32-tile stretch that one evaluation over its whole
    // key range does not find empty, 32 stretches per ballot; num_kv_tiles when none.
    // Warp-uniform, like next. Note: for a mask that reads a tensor summary (a document id at
    // kv_idx) a lane's evaluation reads the 32 per-tile summaries of its stretch, independent
    // loads that overlap, so a look 1024 tiles ahead costs about one 32-tile window's step.
    ATTNJIT_DEVICE static int skip_empty_chunks(const RowMath& math, int tile, int lane) {
      for (; tile < math.num_kv_tiles; tile += 32 * 32) {
        const int first = tile + 32 * lane;
        const int c = first < math.num_kv_tiles
                          ? math.classify_range(first, min(first + 32, math.num_kv_tiles))
                          : static_cast<int>(kTileEmpty);
        const unsigned kept = __ballot_sync(0xffffffffu, c != kTileEmpty);
        if (kept != 0u) return tile + 32 * (__ffs(static_cast<int>(kept)) - 1);
      }
      return math.num_kv_tiles;
    }
  };

  // ---- The timeline (sm90_timeline.cuh): one record per block, written by single threads.
  ATTNJIT_DEVICE Sm90TimelineRecord* timeline_record() const {
    if (params.timeline == nullptr) return nullptr;
    return params.timeline +
           (static_cast<long long>(blockIdx.y) * gridDim.x + static_cast<long long>(blockIdx.x));
  }
  ATTNJIT_DEVICE void stamp(Sm90TimelineStamp which) const {
    if (Sm90TimelineRecord* record = timeline_record()) record->clock[which] = timeline_clock();
  }
  ATTNJIT_DEVICE void start_timeline() const {
    if (Sm90TimelineRecord* record = timeline_record()) {
      record->clock[kStampBlockStart] = timeline_clock();
      record->start_ns = timeline_ns();
      record->smid = timeline_smid();
      record->written = 1;
    }
  }
  ATTNJIT_DEVICE void finish_producer_timeline(unsigned tiles) const {
    if (Sm90TimelineRecord* record = timeline_record()) {
      record->clock[kStampLastVIssued] = timeline_clock();
      record->tiles = tiles;
      record->q_tile = static_cast<unsigned>(math.q0 / BLOCK_M);
      record->batch = static_cast<unsigned>(math.b);
      record->head = static_cast<unsigned>(math.h);
    }
  }
  ATTNJIT_DEVICE void finish_consumer_timeline(int consumer) const {
    Sm90TimelineRecord* record = timeline_record();
    if (record == nullptr) return;
    if (consumer == 0) record->clock[kStampOutputDone] = timeline_clock();
    if (consumer == kConsumerWarpgroups - 1) {
      record->clock[kStampLastConsumerDone] = timeline_clock();
      record->end_ns = timeline_ns();
    }
  }

  // ---- Variable-length sequences (kSequenceTables; sequences.cuh): the kernel of paged calls
  // reads the tables too, and runs a call with tables and no page table with dense maps over the
  // packed (or padded) tensors. With a page table, each sequence's row of the table, its boxes
  // cut at its count, and no tail maps (they are cut at the call's kv_len): the rows of V past
  // the count are cleared as a dense call's are.
  // Note: only plain blocks; RowMath::assign_work stores the sequence's words and waits for the
  // whole block, which a persistent block's warpgroups, assigning their items apart, cannot.
  static constexpr bool kSequenceTables = RowMath::kSequenceTables;
  static_assert(!kSequenceTables || (RowMath::kPagedKv && !kPersistent),
                "sequence tables: the kernel of paged calls, plain blocks");
  // Whether the keys are read through the dense maps: always without a page table; in the kernel
  // of paged calls, for a call with sequence tables and no page table.
  ATTNJIT_DEVICE bool dense_keys() const {
    if constexpr (!kPagedKv) {
      return true;
    } else {
      return kSequenceTables && params.base.kv_pages == nullptr;
    }
  }
  // The coordinates of the block's sequence in the maps: packed rows are one batch entry, from the
  // sequence's first row on.
  ATTNJIT_DEVICE int q_row0() const { return kSequenceTables ? math.sequence.q_row0 : 0; }
  ATTNJIT_DEVICE int q_batch() const {
    return kSequenceTables && params.base.sequences.q_starts != nullptr ? 0 : math.b;
  }
  ATTNJIT_DEVICE int kv_row0() const { return kSequenceTables ? math.sequence.kv_row0 : 0; }
  ATTNJIT_DEVICE int kv_batch() const {
    return kSequenceTables && params.base.sequences.kv_starts != nullptr ? 0 : math.b;
  }
  // Whether the call has any sequence table: without one, a paged call's boxes are cut at the
  // call's kv_len by the tail maps, which TMA fills with zeros past it. (With a page table the
  // host refuses packed keys, so there it means packed queries or key counts.)
  ATTNJIT_DEVICE bool any_sequence_table() const {
    const SequenceTables& t = params.base.sequences;
    return kSequenceTables &&
           (t.q_starts != nullptr || t.kv_starts != nullptr || t.kv_lens != nullptr);
  }

  // The rows of V past the sequence's key count in its last tile are not TMA's zero fill but the
  // next sequence's packed keys, or whatever a padded cache holds past the count (NaN in the
  // tests). Their P is 0, yet 0 x NaN reaches every row through P V, so before the tile's first P
  // V the first consumer waits for the tile's V and writes zeros over them, before its turn on
  // the tensor cores that issues that P V: the other consumers' P V of the tile come in their
  // later turns (GemmTurns) and see them, and the stage is refilled only after every consumer
  // released it. A box row of 128 bytes is one key's 64 columns whatever the swizzle, so the rows
  // are whole 128-byte runs. Called by every thread of consumer warpgroup `consumer` while none
  // of its GEMMs is in flight: in a branch between a GEMM's issue and its wait, ptxas serialises
  // every wgmma of the kernel (C7520, "WG.AR in divergent path"). A call without tables needs
  // none: its boxes are cut at the call's kv_len (the tail maps), which TMA fills with zeros.
  ATTNJIT_DEVICE void clear_values_past_count(int tile, const StageRing& ring,
                                              int consumer) const {
    if constexpr (kSequenceTables) {
      const int valid = math.seq_kv_len() - tile * BLOCK_N;
      if (consumer != 0 || valid >= BLOCK_N || !any_sequence_table()) return;
      mbarrier_wait(stage_barrier(kFullV, ring.stage), ring.parity(), "V full");
      unsigned char* values = tiles + (v_stage(ring.stage) - q_smem);
      // Note: every word of the stage, a fixed count per thread, each stored where its row is
      // past the count: no loop state and no division (a loop over the rows past the count
      // spilled the 192-row soft-capping kernel, whose consumers have 160 registers).
      const int thread = static_cast<int>(threadIdx.x) % 128;
#pragma unroll 1
      for (int k = 0; k < kBoxes * BLOCK_N * 32 / 128; ++k) {
        const int word = thread + 128 * k;  // box word / (BLOCK_N * 32), row (word / 32) % BLOCK_N
        if ((word / 32) % BLOCK_N >= valid) store_shared_32(values + 4 * word, 0u);
      }
      // The tensor cores (the async proxy) read them next: fence, then the warpgroup's barrier.
      fence_proxy_async_shared();
      named_barrier_sync(kConsumerBarrier0, 128);
    }
  }

  // The last kept tile of the item, whose K is in `ring`'s stage, after the tile loop: the last
  // tile without a mask (all are kept), the stage's handoff word with the tile handoff, else
  // `tracked` (the loop's own count; only these kernels keep it live across the loop).
  ATTNJIT_DEVICE int last_kept_tile(const StageRing& ring, int tracked) const {
    if constexpr (!VARIANT::kHasMask) {
      return math.num_kv_tiles - 1;
    } else if constexpr (kHandoff) {
      int tile = 0;
      int tile_class = 0;
      take_tile(ring.stage, tile, tile_class);
      return tile;
    } else {
      return tracked;
    }
  }

  // ---- Producer: warp 0 of warpgroup 0.
  ATTNJIT_DEVICE void produce() {
    const int leader = elect_one_lane();
    if (leader) {
      tma_prefetch_descriptor(&params.q_map);
      tma_prefetch_descriptor(&params.k_map);
      tma_prefetch_descriptor(&params.v_map);
    }
    // K runs one kept tile ahead of V (produce_item), so each has its own ring position.
    StageRing k_ring;
    StageRing v_ring;
    if constexpr (kPersistent) {
      for (WorkItems items; items.next(math);) {
        produce_item(leader, items.count - 1, k_ring, v_ring);
      }
    } else {
      produce_item(leader, 0, k_ring, v_ring);  // run() assigned the block's item
    }
  }

  // The loads of the current work item (math): its Q, then each kept key tile's K and V, K of the
  // next kept tile before V of this one (FA3's order): the consumers issue S of the next tile
  // before P V of this one (with the overlap, in the same turn), and S needs only K.
  ATTNJIT_DEVICE void produce_item(int leader, int item, StageRing& k_ring, StageRing& v_ring) {
    const int lane = static_cast<int>(threadIdx.x) % 32;
    // Note: Q's space frees only once the consumers are done with the previous item, whereas K's
    // stage frees as soon as they have computed S with it; so after the first item the first K
    // goes out before the wait for Q's space. Otherwise Q goes out first: it needs no tile, and
    // its load then overlaps the search for the first kept tile (for a tensor mask, dependent
    // loads of summaries), which used to come before it.
    const bool k_before_q = kPersistent && item > 0;
    if (!k_before_q) load_q(leader, item);
    KeptTiles kept;
    slice_kept_span(kept, lane);
    int tile_class = kTileEmpty;
    int tile = kept.next(math, math.kv_tile_begin, lane, tile_class);
    if constexpr (kTimeline) {
      if (leader) stamp(kStampFirstKIssued);
    }
    // A paged call: each lane's page of the tile (page_of_box), read once for its K and its V.
    int tile_page = 0;
    if (tile < math.num_kv_tiles) {
      tile_page = page_of_box(tile, lane);
      load_stage<false>(leader, tile, k_ring, tile_class, tile_page);
    }
    if (k_before_q) load_q(leader, item);
    if (kHandoff && tile >= math.num_kv_tiles) post_no_more_tiles(leader, k_ring);
    unsigned tiles = 0;  // kept tiles loaded: the timeline's count
    while (tile < math.num_kv_tiles) {
      const int next = kept.next(math, tile + 1, lane, tile_class);
      int next_page = 0;
      if (next < math.num_kv_tiles) {
        next_page = page_of_box(next, lane);
        load_stage<false>(leader, next, k_ring, tile_class, next_page);
      } else if constexpr (kHandoff) {
        post_no_more_tiles(leader, k_ring);
      }
      load_stage<true>(leader, tile, v_ring, 0, tile_page);
      tile = next;
      tile_page = next_page;
      if constexpr (kTimeline) ++tiles;
    }
    if constexpr (kTimeline) {
      if (leader) finish_producer_timeline(tiles);
    }
  }

  // Split-KV with a mask, in each warp that classifies tiles (the producer's; the consumers'
  // without the tile handoff): the block's slice of its query tile's kept span, as the sm80
  // kernel's slice_kept_span (kept_span_slice: from the first kept tile on, so that a band at
  // the end of a long cache is shared by every slice), in place of assign_work's slice of all
  // tiles. Every warp finds the same first tile (classification is deterministic). `kept` keeps
  // the window that holds it, which the walk then starts in; its bits past the slice's end are
  // tiles at or past num_kv_tiles, which every caller takes for none. Warp-uniform.
  ATTNJIT_DEVICE void slice_kept_span(KeptTiles& kept, int lane) {
    if constexpr (kSplitKv && VARIANT::kHasMask) {
      math.num_kv_tiles = (math.seq_kv_len() + BLOCK_N - 1) / BLOCK_N;
      int first_class = kTileEmpty;
      const int first = kept.next(math, 0, lane, first_class);
      int split = 0, slices = 1;
      math.slice_of_block(split, slices);
      const KeySlice slice = kept_span_slice(first, math.num_kv_tiles, split, slices);
      math.kv_tile_begin = slice.begin;
      math.num_kv_tiles = slice.end;
    }
  }

  // The item's Q tile, once the previous item's consumers released its space (persistent).
  ATTNJIT_DEVICE void load_q(int leader, int item) {
    if constexpr (kPersistent) {
      // The previous item's release (a fresh barrier's preceding phase counts as complete).
      mbarrier_wait(q_empty_barrier(), static_cast<unsigned>(item & 1) ^ 1u, "Q empty");
    }
    if constexpr (kSplitKv) {
      if (math.packed()) {
        load_packed_q(leader);
        return;
      }
    }
    if (leader) {
      mbarrier_arrive_expect_tx(q_barrier(), kQBytes);
#pragma unroll(kBoxUnroll)
      for (int box = 0; box < kBoxes; ++box) {
        tma_load_4d(&params.q_map, q_barrier(), q_smem + box * kQBoxBytes, 64 * box,
                    q_row0() + math.q0, math.h, q_batch());
      }
    }
  }

  // A packed GQA launch's Q (split kernel), by the producer warp: row r of the block is query
  // r / g of query head r % g of the group (FwdParams::pack_gqa). The host's map is then 5-d,
  // {head_dim, g, groups, q_len, batch} with the query heads' and the queries' strides, in boxes
  // {64, g, 1, BLOCK_M / g, 1}: pack_block_rows = g * (BLOCK_M / g) rows of 128 bytes in exactly
  // that order, swizzled as a 4-d box's (the swizzle acts on shared addresses). A block's rows
  // start at a query's first head (q0 is a multiple of pack_block_rows); queries past q_len are
  // TMA's zeros. The rows past pack_block_rows (a group that does not divide BLOCK_M: 2 of 128
  // for groups of 7) hold no query: they are written with zeros here, so that the wgmma never
  // reads words no one wrote (their results are never stored).
  ATTNJIT_DEVICE void load_packed_q(int leader) {
    const int rows = params.base.pack_block_rows;
    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int unused_words = (BLOCK_M - rows) * 32;  // 128-byte rows of 32 words
#pragma unroll(kBoxUnroll)
    for (int box = 0; box < kBoxes; ++box) {
      unsigned char* unused = tiles + box * kQBoxBytes + rows * 128;
      for (int word = lane; word < unused_words; word += 32) {
        store_shared_32(unused + 4 * word, 0u);
      }
    }
    // The zeros (generic proxy) before the consumers' wgmma (async proxy): each writer's fence,
    // then the leader's arrival, which the consumers' wait for Q acquires.
    fence_proxy_async_shared();
    __syncwarp();
    if (leader) {
      mbarrier_arrive_expect_tx(q_barrier(), static_cast<unsigned>(kBoxes * rows * 128));
      const int query0 = packed_row_query(math.q0, params.base.pack_gqa_inverse);
#pragma unroll(kBoxUnroll)
      for (int box = 0; box < kBoxes; ++box) {
        tma_load_5d(&params.q_map, q_barrier(), q_smem + box * kQBoxBytes, 64 * box, 0, math.h,
                    q_row0() + query0, q_batch());
      }
    }
  }

  // Tile handoff: the word of -1 in the next K stage, published by an arrival without bytes.
  ATTNJIT_DEVICE void post_no_more_tiles(int leader, StageRing& ring) {
    const int stage = ring.stage;
    mbarrier_wait(stage_barrier(kEmptyK, stage), ring.parity() ^ 1u, "K empty");
    if (leader) {
      store_shared_32(tile_word(stage), static_cast<unsigned>(kNoMoreTiles));
      mbarrier_arrive(stage_barrier(kFullK, stage));
    }
    __syncwarp();
    ring.advance();
  }

  // Key tile `tile`'s K (kValues: V) into the next stage of its ring. A paged call's `lane_page`:
  // the lane's page_of_box for the tile.
  template <bool kValues>
  ATTNJIT_DEVICE void load_stage(int leader, int tile, StageRing& ring, int tile_class = 0,
                                 int lane_page = 0) {
    // Note: a stage is reused once all consumer threads released its previous contents; in
    // the first round the wait returns at once (a fresh barrier's preceding phase, of parity 1,
    // counts as completed).
    const int stage = ring.stage;
    mbarrier_wait(stage_barrier(kValues ? kEmptyV : kEmptyK, stage), ring.parity() ^ 1u,
                  kValues ? "V empty" : "K empty");
    const unsigned full = stage_barrier(kValues ? kFullV : kFullK, stage);
    const unsigned tile_smem = kValues ? v_stage(stage) : k_stage(stage);
    if (leader) {
      if (kHandoff && !kValues) {
        store_shared_32(tile_word(stage), static_cast<unsigned>(tile * 4 + tile_class));
      }
      mbarrier_arrive_expect_tx(full, kKVBytes);
      if (dense_keys()) {
        const TensorMap* map = kValues ? &params.v_map : &params.k_map;
        const int row = kv_row0() + tile * BLOCK_N;
        const int batch = kv_batch();
#pragma unroll(kBoxUnroll)
        for (int box = 0; box < kBoxes; ++box) {
          tma_load_4d(map, full, tile_smem + box * kKVBoxBytes, 64 * box, row, math.h_kv, batch);
        }
      }
    }
    if constexpr (kPagedKv) {
      if (!dense_keys()) load_paged_boxes<kValues>(leader, tile, lane_page, full, tile_smem);
    }
    __syncwarp();
    ring.advance();
  }

  // ---- A paged key/value cache (kPagedKv): a key tile is BLOCK_N / box_rows boxes of
  // box_rows = sm90_paged_box_rows(page size, BLOCK_N) rows (the host's maps have those boxes),
  // each inside one page. Lane i looks up box i's page (all lanes at once, one round trip a
  // tile); the issuing lane takes each from its lane. Box i of 64-column box j lands at
  // j * kKVBoxBytes + i * box_rows * 128: the dense tile's layout, since box_rows is a multiple
  // of the 8-row swizzle atom.
  static constexpr bool kPagedKv = RowMath::kPagedKv;
  static_assert(!kPagedKv || (BLOCK_N & -BLOCK_N) >= kSm90MinPagedBoxRows,
                "a paged key tile of whole swizzle atoms");
  static_assert(!kPagedKv || BLOCK_N / kSm90MinPagedBoxRows <= 32, "a page per lane");

  // Note: written as a shift, so that ptxas divides by it with one: a power of two it cannot see
  // (a page size's lowest bit) took an integer division each (about twenty instructions with an
  // I2F and a MUFU.RCP), three in the producer.
  ATTNJIT_DEVICE int paged_box_rows() const {
    return 1 << (__ffs(sm90_paged_box_rows(params.base.kv_page.size, BLOCK_N)) - 1);
  }

  // The page of box `lane` of key tile `tile`; -1 (a box of zeros) past the tile's boxes and for
  // a box whose rows all lie at or past kv_len.
  ATTNJIT_DEVICE int page_of_box(int tile, int lane) const {
    if constexpr (!kPagedKv) {
      return 0;
    } else {
      if (dense_keys()) return 0;
      const FwdParams& p = params.base;
      const int box_rows = paged_box_rows();
      const int row = tile * BLOCK_N + lane * box_rows;
      if (lane * box_rows >= BLOCK_N || row >= math.seq_kv_len()) return -1;
      return p.kv_pages[static_cast<long long>(math.b) * p.kv_pages_stride +
                        p.kv_page.quotient(row)];
    }
  }

  // The TMA loads of a paged tile (all 32 lanes: the pages come by shuffle). The box that holds
  // key kv_len - 1 is read through the tail maps (Sm90FwdParams), whose pages end after it, so
  // the rows after it are zeros; boxes past it have page -1; entries outside [0, num_pages) are
  // out of the maps' range: zeros too, as the sm80 kernel's paged loads give.
  template <bool kValues>
  ATTNJIT_DEVICE void load_paged_boxes(int leader, int tile, int lane_page, unsigned full,
                                       unsigned tile_smem) {
    const FwdParams& p = params.base;
    const int box_rows = paged_box_rows();
    const int boxes = BLOCK_N / box_rows;
    // Note: a call with sequence tables has no tail maps of its sequences' counts; its last box
    // reads whole pages, and the consumers clear V's rows past the count
    // (clear_values_past_count). No box is a tail box then (last_key -1).
    const int last_key = any_sequence_table() ? -1 : p.kv_len - 1;
    // Each lane's box's row in its page (lane i: box i), taken by the issuing lane with its page.
    // Note: one remainder a lane before the loop, rather than one a box in the issuing lane: the
    // divisor's values in uniform registers through the loop made ptxas spill the producer of the
    // head-dim-256 document kernel (8 bytes).
    const int lane_in_page =
        p.kv_page.remainder(tile * BLOCK_N + static_cast<int>(threadIdx.x) % 32 * box_rows);
#pragma unroll 1
    for (int i = 0; i < boxes; ++i) {
      const int page = __shfl_sync(0xffffffffu, lane_page, i);
      const int in_page = __shfl_sync(0xffffffffu, lane_in_page, i);
      const int row = tile * BLOCK_N + i * box_rows;
      if (leader) {
        const bool tail = row <= last_key && last_key < row + box_rows;
        const TensorMap* map = kValues ? (tail ? &params.v_tail_map : &params.v_map)
                                       : (tail ? &params.k_tail_map : &params.k_map);
        const unsigned box_smem = tile_smem + static_cast<unsigned>(i * box_rows * 128);
#pragma unroll(kBoxUnroll)
        for (int box = 0; box < kBoxes; ++box) {
          tma_load_4d(map, full, box_smem + box * kKVBoxBytes, 64 * box, in_page, math.h_kv,
                      page);
        }
      }
    }
  }

  // Ping-pong between the consumer warpgroups (FA3, section 3.1), round robin (FA3's
  // warp_scheduler_barrier_arrive): they take turns issuing their GEMMs, so that the others'
  // softmax runs while one's GEMMs use the tensor cores. A turn (the issue of S = Q K^T, or of
  // O += P V) starts with bar.sync on the warpgroup's own barrier c and ends with bar.arrive on
  // the next one's, (c + 1) mod C (128 threads waiting, 128 arriving). So the turns go 0, 1,
  // .., C - 1, 0, ..: consumer c's k-th turn waits for consumer c - 1's k-th (consumer 0's for
  // consumer C - 1's (k - 1)-th), hence no barrier gets a second arrival before its wait.
  // Consumer 0 goes first: consumer C - 1 arrives once on consumer 0's barrier before its first
  // turn, and consumer 0 waits once more after its last turn for consumer C - 1's last arrival,
  // so that every arrival meets a wait and no barrier is left half-arrived at exit. All
  // warpgroups walk the same kept tiles, hence take the same number of turns. A lone consumer
  // (BLOCK_M 64) takes no turns: its GEMMs interleave with the other resident block's.
  struct GemmTurns {
    unsigned own;
    unsigned next;
    ATTNJIT_DEVICE explicit GemmTurns(int consumer)
        : own(kTurnBarrier0 + static_cast<unsigned>(consumer)),
          next(kTurnBarrier0 + static_cast<unsigned>((consumer + 1) % kConsumerWarpgroups)) {}
    static constexpr unsigned kThreads = 2 * 128;  // the waiting and the arriving warpgroup
    static constexpr bool kTurns = kConsumerWarpgroups > 1;
    // Note: three consumers (160 registers each) of a masked kernel with the tile handoff take
    // the ids anew from the thread index at each turn (a few integer instructions) rather than
    // hold them across the tile loop: held, the id was the one value their causal kernel spilled
    // (4 bytes, a local load per turn; 192 x 128 and 192 x 112 tiles). Only there: the unmasked
    // kernels (the head-dim-64 defaults) do not spill, and without the handoff the change of
    // register allocation made the sliding window's spill (docs/PERFORMANCE.md, "Eighteenth
    // session").
    static constexpr bool kRecomputed =
        kConsumerWarpgroups == 3 && VARIANT::kHasMask && kHandoff;
    ATTNJIT_DEVICE static unsigned consumer_now() {
      return opaque(threadIdx.x) / 128 - 1;
    }
    ATTNJIT_DEVICE void begin() const {
      if constexpr (kTurns) {
        named_barrier_sync(kRecomputed ? kTurnBarrier0 + consumer_now() : own, kThreads);
      }
    }
    ATTNJIT_DEVICE void end() const {
      if constexpr (kTurns) {
        const unsigned id =
            kRecomputed ? kTurnBarrier0 + (consumer_now() + 1) % kConsumerWarpgroups : next;
        named_barrier_arrive(id, kThreads);
      }
    }
  };

  // The kept tile after `tile` (-1: the first) and its class, or num_kv_tiles when none is left:
  // classified by the warp itself, or with the tile handoff read from the word of the K stage it
  // occupies, `at` (waited for here; the caller's wait for the same phase then returns at once).
  ATTNJIT_DEVICE int next_tile(KeptTiles& kept, int tile, int lane, int& tile_class,
                               const StageRing& at) const {
    if constexpr (kHandoff) {
      mbarrier_wait(stage_barrier(kFullK, at.stage), at.parity(), "K full");
      int next = 0;
      return take_tile(at.stage, next, tile_class) ? next : math.num_kv_tiles;
    } else {
      return kept.next(math, tile + 1, lane, tile_class);
    }
  }
  ATTNJIT_DEVICE static StageRing following(StageRing ring) {
    ring.advance();
    return ring;
  }

  // ---- Consumers: warpgroup 1 + `consumer` (0 .. C - 1) owns query rows 64 * consumer .. + 63.
  ATTNJIT_DEVICE void consume(int consumer) {
    StageRing ring;
    if constexpr (kPersistent) {
      for (WorkItems items; items.next(math);) consume_item(consumer, items.count - 1, ring);
    } else {
      consume_item(consumer, 0, ring);
    }
  }

  // The current work item (math): every kept key tile, then the epilogue.
  ATTNJIT_DEVICE void consume_item(int consumer, int item, StageRing& ring) {
    unsigned thread_index = threadIdx.x;
    if constexpr (kPersistent) {
      thread_index = opaque(thread_index);
      q_smem = opaque(q_smem);
    }
    const int thread = static_cast<int>(thread_index) - 128 * (consumer + 1);
    const int lane = thread % 32;
    const int warp = 4 * consumer + thread / 32;  // RowMath's consumer warp
    typename RowMath::RowValues row_values;
    math.init_row_values(warp, lane, row_values);

    Accumulators acc_o;
#pragma unroll
    for (int j = 0; j < kDTiles; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[0][j][e] = 0.0f;
    }
    OnlineSoftmax softmax[1];
    softmax[0].init();

    const unsigned q_rows = q_smem + consumer * kConsumerRowBytes;
    mbarrier_wait(q_barrier(), static_cast<unsigned>(item & 1), "Q full");
    if constexpr (kTimeline) {
      if (consumer == 0 && thread == 0) stamp(kStampQReady);
    }
    KeptTiles kept;
    if constexpr (kSplitKv && VARIANT::kHasMask) {
      if constexpr (kHandoff) {
        // Note: the producer's slice arrives tile by tile; every tile of the row is below this.
        math.num_kv_tiles = (math.seq_kv_len() + BLOCK_N - 1) / BLOCK_N;
      } else {
        slice_kept_span(kept, lane);
      }
    }
    const GemmTurns turns(consumer);
    int tile_class = kTileEmpty;
    const int first = next_tile(kept, math.kv_tile_begin - 1, lane, tile_class, ring);
    // Note: the opening arrival and the closing wait below pair up even when the item keeps no
    // tile (no turn between them), so they need no condition: a flag kept live across the tile
    // loop for them was the one value the D=128 document kernel with the overlap spilled.
    const int last = kConsumerWarpgroups - 1;
    if (consumer == last) turns.end();  // consumer 0's first turn
    if constexpr (kOverlap) {
      if (first < math.num_kv_tiles) {
        consume_overlapped(first, tile_class, kept, q_rows, warp, lane, row_values, turns, acc_o,
                           softmax, ring);
      }
    } else {
      for (int tile = first; tile < math.num_kv_tiles;
           tile = next_tile(kept, tile, lane, tile_class, ring)) {
        mbarrier_wait(stage_barrier(kFullK, ring.stage), ring.parity(), "K full");
        compute_tile(tile, tile_class, ring, q_rows, warp, lane, row_values, turns, acc_o,
                     softmax);
        mbarrier_arrive(stage_barrier(kEmptyV, ring.stage));
        ring.advance();
      }
    }
    if (consumer == 0) turns.begin();  // the last consumer's arrival after its last turn
    if constexpr (kTimeline) {
      if (consumer == 0 && threadIdx.x % 128 == 0) stamp(kStampLoopDone);
    }

    // Note: Q is released only after the turns above are over. The next item's Q wait of the
    // last consumer then follows consumer 0's last bar.sync of this item, so its first
    // bar.arrive of the next item never meets the same barrier phase as its last of this one.
    if constexpr (kOutputApart) {
      // Every wgmma reading Q has retired (compute_tile waits for its groups).
      mbarrier_arrive(q_empty_barrier());
      // The warp's reads of the previous item's staged rows come before its writes.
      __syncwarp();
    } else {
      // Note: the output is staged in this warpgroup's own rows of the Q tile; every warp of
      // the warpgroup must be past its last wgmma reading them first.
      named_barrier_sync(kConsumerBarrier0 + static_cast<unsigned>(consumer), 128);
    }
    // Note: two blocks per SM take the warp index anew from the thread index, so that it need not
    // stay live across the tile loop, which uses only values derived from it: held there, it was
    // the one value their causal kernel (104-register consumers) spilled. Only there: elsewhere
    // the change of register allocation made other kernels spill (192-row soft-capping with
    // exponentials on the FMA pipe, 16 bytes).
    const int out_warp =
        kTwoBlocksPerSm ? static_cast<int>(opaque(threadIdx.x)) / 32 - 4 : warp;
    math.store_output(acc_o, softmax, out_warp, lane);
    if constexpr (kTimeline) {
      if (threadIdx.x % 128 == 0) finish_consumer_timeline(consumer);
    }
    if constexpr (kPersistent && !kOutputApart) {
      // The staging's st.shared / ld.shared come before the next Q's TMA writes (async proxy).
      fence_proxy_async_shared();
      mbarrier_arrive(q_empty_barrier());
    }
  }

  // An accumulator tile [1][n8 chunks][4] as wgmma's flat register list d[4 * chunk + e].
  template <int CHUNKS>
  ATTNJIT_DEVICE static float (&flat(float (&tile)[1][CHUNKS][4]))[4 * CHUNKS] {
    return reinterpret_cast<float(&)[4 * CHUNKS]>(tile);
  }

  // ---- The two GEMMs, issued (not waited for) by the whole warpgroup.
  // S = Q K^T: K-steps of 16 columns, 4 per 64-column box (32 bytes apart in a row).
  // Note: a step's descriptors are the tile's advanced by its byte offset: K's with
  // wgmma_desc_advance (one add, in uniform registers). Q's address is per consumer, so its
  // descriptor lives in ordinary registers and moves to uniform ones at each step; only its low
  // word varies (the high one is the layout's constant, and the start-address field cannot
  // carry), so each step adds to the low word alone. Q's address is made opaque so that its
  // descriptors are recomputed here (a few integer adds per tile) instead of being hoisted out
  // of the tile loop into HEAD_DIM / 16 64-bit registers, which the overlapped schedule cannot
  // spare.
  ATTNJIT_DEVICE void issue_scores(Scores& acc_s, int stage, unsigned q_rows) const {
    const unsigned q_low = static_cast<unsigned>(wgmma_desc_k_major(opaque(q_rows)));
    const unsigned long long q_high = wgmma_desc_k_major(0u) & 0xffffffff00000000ull;
    const unsigned long long k_base = wgmma_desc_k_major(k_stage(stage));
#pragma unroll
    for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
      const unsigned column = (kk % 4) * 32u;
      const unsigned long long desc_q =
          q_high | (q_low + (((kk / 4) * kQBoxBytes + column) >> 4));
      const unsigned long long desc_k =
          wgmma_desc_advance(k_base, (kk / 4) * kKVBoxBytes + column);
      Wgmma<ELEM, BLOCK_N>::ss(flat(acc_s), desc_q, desc_k, kk > 0 ? 1 : 0);
    }
    wgmma_commit_group();
  }

  // P, the A operand of O += P V: in registers as wgmma's A fragments (the default), or, with
  // kPInSmem, in the consumer's P tile in shared memory (the fragments are then never written,
  // and hold no registers).
  struct POperand {
    PFragments fragments;
    unsigned tile = 0;  // kPInSmem: the consumer's P tile, shared-window address
  };

  ATTNJIT_DEVICE POperand p_operand(int consumer) const {
    POperand p;
    if constexpr (kPInSmem) p.tile = q_smem + kPOffset + consumer * kPTileBytes;
    return p;
  }

  // O += P V. P's A fragment of key-step kk is S's n8 chunks 2kk, 2kk + 1
  // (RowMath::p_fragment), or 16 columns of the P tile (32 bytes in a 64-key box, as Q's in
  // issue_scores); V [key][d] is the MN-major B operand, 16 key rows (2048 bytes) per step.
  // Note: each step's V descriptor is the stage's advanced by the step's 2048 bytes
  // (wgmma_desc_advance), as K's in issue_scores. Built from the offset address instead,
  // each took an add, a mask, a shift, an or and two moves on the uniform datapath between
  // consecutive HGMMAs (SASS), which kept the consumer's turn on the tensor cores open longer.
  ATTNJIT_DEVICE void issue_output(Accumulators& acc_o, const POperand& p, int stage) const {
    const unsigned long long p_base = kPInSmem ? wgmma_desc_k_major(p.tile) : 0ull;
    const unsigned long long v_base = wgmma_desc_mn_major(v_stage(stage), kKVBoxBytes);
#pragma unroll
    for (int kk = 0; kk < kNTiles / 2; ++kk) {
      const unsigned long long desc_v = wgmma_desc_advance(v_base, kk * 16u * 128u);
      if constexpr (kPInSmem) {
        const unsigned long long desc_p =
            wgmma_desc_advance(p_base, (kk / 4) * kPBoxBytes + (kk % 4) * 32u);
        Wgmma<ELEM, HEAD_DIM>::ss_mn(flat(acc_o), desc_p, desc_v, 1);
      } else {
        Wgmma<ELEM, HEAD_DIM>::rs(flat(acc_o), p.fragments[kk], desc_v, 1);
      }
    }
    wgmma_commit_group();
  }

  // S's probabilities become P: packed to ELEM, in registers or into the P tile. The tile is
  // written with plain stores that the tensor cores (the async proxy) read next, so every
  // writing thread fences the proxies first (PTX ISA, "Memory Consistency Model", async proxy).
  // Each warp writes, and its share of P V reads, only its own 16 rows (wgmma's A rows of warp w
  // are its accumulator rows), so a warp-level barrier suffices, as in FlashAttention-3. The
  // previous P V reading the tile has completed: the caller waited for it (wgmma_wait_group<0>).
  ATTNJIT_DEVICE void make_p(const Scores& acc_s, POperand& p, int warp, int lane) const {
    if constexpr (kPInSmem) {
      using PTile = SwizzledTile<kSm90ConsumerRows, BLOCK_N>;
      unsigned char* tile = tiles + (p.tile - q_smem);
      const int warp_rows = PTile::fixed_offset(16 * (warp % 4), 0);
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        // Row g + 8r of the warp's 16, columns 8j + 2q, +1: one 32-bit word (RowMath::store_output
        // stages O the same way).
        const int p_lane = PTile::lane_offset((lane >> 2) + 8 * r, 0) + 4 * (lane & 3);
#pragma unroll
        for (int j = 0; j < kNTiles; ++j) {
          store_shared_32(tile + warp_rows + PTile::fixed_offset(0, j) +
                              (p_lane ^ PTile::xor_offset(j)),
                          ElemTraits<ELEM>::pack2(acc_s[0][j][2 * r], acc_s[0][j][2 * r + 1]));
        }
      }
      fence_proxy_async_shared();
      __syncwarp();
    } else {
#pragma unroll
      for (int kk = 0; kk < kNTiles / 2; ++kk) RowMath::p_fragment(acc_s[0], kk, p.fragments[kk]);
    }
  }

  // A turn on the tensor cores for one GEMM alone, waited for.
  ATTNJIT_DEVICE void score_turn(Scores& acc_s, int stage, unsigned q_rows,
                                 const GemmTurns& turns) const {
    wgmma_fence_accumulators(flat(acc_s));
    turns.begin();
    wgmma_fence();
    issue_scores(acc_s, stage, q_rows);
    turns.end();
    wgmma_wait_group<0>();
    wgmma_fence_accumulators(flat(acc_s));
  }
  ATTNJIT_DEVICE void output_turn(Accumulators& acc_o, const POperand& p, int stage,
                                  const GemmTurns& turns) const {
    wgmma_fence_accumulators(flat(acc_o));
    turns.begin();
    wgmma_fence();
    issue_output(acc_o, p, stage);
    turns.end();
    wgmma_wait_group<0>();
    wgmma_fence_accumulators(flat(acc_o));
  }

  // One key tile: two GEMM turns around the softmax. K's space is released once S has completed;
  // V is waited for only before P V.
  ATTNJIT_DEVICE void compute_tile(int tile, int tile_class, const StageRing& ring, unsigned q_rows,
                                   int warp,
                                   int lane, const typename RowMath::RowValues& row_values,
                                   const GemmTurns& turns, Accumulators& acc_o,
                                   OnlineSoftmax (&softmax)[1]) const {
    Scores acc_s;
    score_turn(acc_s, ring.stage, q_rows, turns);
    mbarrier_arrive(stage_barrier(kEmptyK, ring.stage));
    // ---- Scores, mask and the online softmax: the SM80 kernel's (see the header).
    typename RowMath::RowShifts shift{};
    const float score_scale =
        math.template apply_scores<kFoldScale, kRaggedMaskEvery, kMaskRowsPastEnd>(
            acc_s, tile, tile_class, warp, lane, row_values, shift);
    softmax[0].template update<kFoldScale, /*SKIP_UNMOVED=*/true, kPolyExp2, RowMath::kRowShift,
                               RowMath::kKeySlope>(
        acc_s[0], acc_o[0], score_scale, shift[0]);
    POperand p = p_operand(warp / 4);
    make_p(acc_s, p, warp, lane);
    clear_values_past_count(tile, ring, warp / 4);
    // Note: waited for before the turn, so that a late V never holds up the other consumers.
    mbarrier_wait(stage_barrier(kFullV, ring.stage), ring.parity(), "V full");
    output_turn(acc_o, p, ring.stage, turns);
  }

  // Intra-warpgroup pipelining (FA3, section 3.2): S of the next kept tile is issued together
  // with P V of the current one, and the softmax of the next tile runs while P V is still on the
  // tensor cores; only then does the warpgroup wait for P V, rescale O by the new running max and
  // turn S into the next P. The cost is registers: the next S, the current P and O are live at
  // once. A stage (K and V of one tile) is released once its P V has completed, so with two
  // stages the producer loads tile i + 2 while the consumers work on tile i + 1. Each turn on the
  // tensor cores (GemmTurns) now issues both GEMMs; the first tile's S and the last tile's P V
  // take a turn each, so both consumers still take the same number of turns.
  ATTNJIT_DEVICE void consume_overlapped(int first, int first_class, KeptTiles& kept,
                                         unsigned q_rows, int warp, int lane,
                                         const typename RowMath::RowValues& row_values,
                                         const GemmTurns& turns, Accumulators& acc_o,
                                         OnlineSoftmax (&softmax)[1], StageRing& ring) const {
    Scores acc_s;
    POperand p = p_operand(warp / 4);
    mbarrier_wait(stage_barrier(kFullK, ring.stage), ring.parity(), "K full");
    if constexpr (kTimeline) {
      if (warp == 0 && lane == 0) stamp(kStampFirstKReady);
    }
    score_turn(acc_s, ring.stage, q_rows, turns);
    mbarrier_arrive(stage_barrier(kEmptyK, ring.stage));
    typename RowMath::RowShifts shift{};
    const float first_scale =
        math.template apply_scores<kFoldScale, kRaggedMaskEvery, kMaskRowsPastEnd>(
            acc_s, first, first_class, warp, lane, row_values, shift);
    // O is still zero: its rescale is a no-op.
    softmax[0].template update<kFoldScale, /*SKIP_UNMOVED=*/true, kPolyExp2, RowMath::kRowShift,
                               RowMath::kKeySlope>(
        acc_s[0], acc_o[0], first_scale, shift[0]);
    make_p(acc_s, p, warp, lane);

    int tile_class = kTileEmpty;
    int pv_tile = first;  // the tile of the next P V, where last_kept_tile needs it
    for (int tile = next_tile(kept, first, lane, tile_class, following(ring));
         tile < math.num_kv_tiles;
         tile = next_tile(kept, tile, lane, tile_class, following(ring))) {
      const StageRing previous = ring;
      ring.advance();
      mbarrier_wait(stage_barrier(kFullK, ring.stage), ring.parity(), "K full");
      wgmma_fence_accumulators(flat(acc_s));
      wgmma_fence_accumulators(flat(acc_o));
      turns.begin();
      wgmma_fence();
      issue_scores(acc_s, ring.stage, q_rows);
      // Note: V is waited for only now, with S already on the tensor cores (FA3's order).
      mbarrier_wait(stage_barrier(kFullV, previous.stage), previous.parity(), "V full");
      issue_output(acc_o, p, previous.stage);
      turns.end();
      wgmma_wait_group<1>();  // S is complete; P V may still be running
      wgmma_fence_accumulators(flat(acc_s));
      mbarrier_arrive(stage_barrier(kEmptyK, ring.stage));
      const float score_scale =
          math.template apply_scores<kFoldScale, kRaggedMaskEvery, kMaskRowsPastEnd>(
              acc_s, tile, tile_class, warp, lane, row_values, shift);
      float rescale[2];
      softmax[0].template exponentiate<kFoldScale, kNTiles, kPolyExp2, RowMath::kRowShift,
                               RowMath::kKeySlope>(
          acc_s[0], rescale, score_scale, shift[0]);
      wgmma_wait_group<0>();
      wgmma_fence_accumulators(flat(acc_o));
      mbarrier_arrive(stage_barrier(kEmptyV, previous.stage));
      OnlineSoftmax::rescale_output</*SKIP_UNMOVED=*/true>(acc_o[0], rescale);
      make_p(acc_s, p, warp, lane);
      pv_tile = tile;
    }
    // Note: a sequence's last tile is its last kept one, whose P V is this one after the loop:
    // its V is cleared here, where the fewest registers are live (before the loop's P V, the
    // 192-row soft-capping kernel spilled 20-56 bytes).
    clear_values_past_count(last_kept_tile(ring, pv_tile), ring, warp / 4);
    mbarrier_wait(stage_barrier(kFullV, ring.stage), ring.parity(), "V full");
    output_turn(acc_o, p, ring.stage, turns);
    mbarrier_arrive(stage_barrier(kEmptyV, ring.stage));
    ring.advance();
  }
};

// The kernel body; the generated entry point calls it with its only argument.
template <typename VARIANT, typename ELEM, int HEAD_DIM, int BLOCK_M, int BLOCK_N, int NUM_STAGES,
          unsigned FEATURES>
ATTNJIT_DEVICE void attention_forward_sm90(const Sm90FwdParams& params) {
  AttentionForwardSm90<VARIANT, ELEM, HEAD_DIM, BLOCK_M, BLOCK_N, NUM_STAGES, FEATURES> kernel(
      params);
  kernel.run();
}

#endif  // ATTNJIT_KERNEL_CODE

}  // namespace attnjit
