// FlashAttention-2 forward for SM80+ over a variant struct (mask, score and tile-classify hooks).
//
// One thread block computes BLOCK_M queries of one (batch, query head) against every key tile the
// variant does not classify as empty. Each warp owns BLOCK_M / NUM_WARPS consecutive query rows,
// a multiple of 16 (m16 tiles); K and V fragments loaded once serve all of a warp's m-tiles.
//
// Data flow per block:
//   Q tile   global --cp.async--> swizzled smem --ldmatrix--> registers (when small) or
//            re-read from smem at every k-step (to keep the accumulators under 255 registers)
//   K, V     global --cp.async, NUM_STAGES-deep ring--> swizzled smem --ldmatrix(.trans)--> mma
//   S = Q K^T (fp32) -> score hook, bounds and mask -> online softmax (exp2, log2 units)
//   P (bf16/fp16 in registers, reusing the S fragments as A operands) x V -> O (fp32)
//   O / l  -> smem (Q's space) -> 16-byte coalesced stores; LSE = max * ln 2 + ln l
//
// Grid: gridDim.x * gridDim.y blocks, exactly ceil(q_len / BLOCK_M) * batch * num_heads_q *
// num_splits of them (the host launches x = query tiles, y = batch * num_heads_q * num_splits;
// num_splits is 1 unless a decoding call splits its keys, and a packed GQA call arrives with its
// groups as heads: FwdParams). The linear block index is re-mapped head-major: consecutive
// blocks are consecutive query tiles of one (batch, head), so the blocks resident together read
// the same K and V and share them in L2 (measured on an H100: +8% on noop at D=128, +3.5%
// causal). Within a head the *last* query tiles start first: under a causal-like mask they have
// the most key tiles, and starting the longest work first balances the tail.
#pragma once

#include "attnjit/copy.cuh"
#include "attnjit/fwd_config.cuh"
#include "attnjit/fwd_params.cuh"
#include "attnjit/grid_dependency.cuh"
#include "attnjit/mma.cuh"
#include "attnjit/numeric.cuh"
#include "attnjit/softmax.cuh"
#include "attnjit/tile.cuh"
#include "attnjit/variant_args.cuh"

namespace attnjit {

// Whether a variant's score has a row shift (codegen/factor_score.hpp: kScoreRowShift,
// score_key_slope, score_row_shift), and whether that shift has a key slope. Variants without
// one do not declare kScoreRowShift, so their generated source stayed what it was before it.
template <typename VARIANT, typename = void>
struct ScoreRowShiftOf {
  static constexpr bool kShift = false;
  static constexpr bool kKeySlope = false;
};
template <typename VARIANT>
struct ScoreRowShiftOf<VARIANT, decltype(void(VARIANT::kScoreRowShift))> {
  static constexpr bool kShift = VARIANT::kScoreRowShift;
  static constexpr bool kKeySlope = VARIANT::kScoreRowShift && VARIANT::kScoreKeySlope;
};

// Whether a variant's kernel reads keys and values through a paged cache's page table
// (FwdParams::kv_pages): the generated struct of a paged kernel declares kPagedKv (codegen:
// KernelConfig::paged_kv); the others do not, so their source stayed what it was. A member of the
// variant, not a macro, so that kernels of both kinds can share one translation unit (the SIMT
// emulator builds every kernel of a test into one).
template <typename VARIANT, typename = void>
struct PagedKvOf {
  static constexpr bool kPaged = false;
};
template <typename VARIANT>
struct PagedKvOf<VARIANT, decltype(void(VARIANT::kPagedKv))> {
  static constexpr bool kPaged = VARIANT::kPagedKv;
};

// Whether a variant's kernel reads per-sequence extents (FwdParams::sequences: packed queries,
// packed keys, per-sequence key counts): the sm80 family's kernel of paged and variable-length
// calls declares kSequenceTables; the others do not, so their code stays what it was.
template <typename VARIANT, typename = void>
struct SequenceTablesOf {
  static constexpr bool kTables = false;
};
template <typename VARIANT>
struct SequenceTablesOf<VARIANT, decltype(void(VARIANT::kSequenceTables))> {
  static constexpr bool kTables = VARIANT::kSequenceTables;
};

// Where each lane's data lives: ldmatrix row addresses, mma fragment coordinates and the output
// staging, as pure integer functions (host-callable, so tests/kernels/fragment_emulation_test.cpp
// can replay a warp's path against the PTX ISA fragment layouts). Fragment layouts: mma.cuh.
// Byte offsets are relative to the start of the tile they address.
template <int HEAD_DIM, int BLOCK_M, int BLOCK_N, int NUM_WARPS>
struct ForwardLayout {
  static constexpr int kMTiles = BLOCK_M / (16 * NUM_WARPS);  // m16 tiles per warp
  static constexpr int kWarpRows = 16 * kMTiles;
  using QTile = SwizzledTile<BLOCK_M, HEAD_DIM>;
  using KVTile = SwizzledTile<BLOCK_N, HEAD_DIM>;

  // First row of warp w's rows in the block (and in the Q tile).
  ATTNJIT_HD static constexpr int warp_row0(int warp) { return kWarpRows * warp; }
  ATTNJIT_HD static constexpr int q_warp_offset(int warp) {
    return QTile::fixed_offset(warp_row0(warp), 0);
  }

  // A fragments of Q for k-step kk of m-tile mt: matrices (rows 0-7 | 8-15) x (cols 0-7 | 8-15)
  // of the m-tile; lanes 0-15 address rows 0-15 at chunk 2kk, lanes 16-31 the same rows at
  // 2kk + 1. Offset from the warp's first row (q_warp_offset).
  ATTNJIT_HD static int q_lane(int lane) { return QTile::lane_offset(lane & 15, lane >> 4); }
  ATTNJIT_HD static int q_fragment(int q_lane, int mt, int kk) {
    return QTile::fixed_offset(16 * mt, 2 * kk) + (q_lane ^ QTile::xor_offset(2 * kk));
  }

  // B fragments of S = Q K^T from K [key][d], keys 16p..16p+15, k-step kk: matrix 0 = keys 0-7 x
  // d-chunk 2kk (b0 of n-tile 2p), 1 = keys 0-7 x chunk 2kk+1 (b1 of 2p), 2 = keys 8-15 x 2kk
  // (b0 of 2p+1), 3 = keys 8-15 x 2kk+1 (b1 of 2p+1).
  ATTNJIT_HD static int k_lane(int lane) {
    return KVTile::lane_offset((lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
  }
  ATTNJIT_HD static int k_fragment(int k_lane, int p, int kk) {
    return KVTile::fixed_offset(16 * p, 2 * kk) + (k_lane ^ KVTile::xor_offset(2 * kk));
  }

  // B fragments of O += P V from V [key][d] with ldmatrix.trans, keys 16kk..16kk+15, d-tiles
  // 2p, 2p+1: matrix 0 = keys 0-7 x d-chunk 2p (b0 of d-tile 2p), 1 = keys 8-15 x 2p (b1 of 2p),
  // 2 = keys 0-7 x 2p+1, 3 = keys 8-15 x 2p+1.
  ATTNJIT_HD static int v_lane(int lane) {
    return KVTile::lane_offset((lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4);
  }
  ATTNJIT_HD static int v_fragment(int v_lane, int kk, int p) {
    return KVTile::fixed_offset(16 * kk, 2 * p) + (v_lane ^ KVTile::xor_offset(2 * p));
  }

  // Accumulator element e of n-tile j of m-tile mt (S or O): row in the block, column in the tile.
  ATTNJIT_HD static constexpr int acc_row(int warp, int lane, int mt, int e) {
    return warp_row0(warp) + 16 * mt + (lane >> 2) + 8 * (e >> 1);
  }
  ATTNJIT_HD static constexpr int acc_col(int lane, int j, int e) {
    return acc_col_lane(lane) + acc_col_step(j, e);
  }
  // A column as the lane's first column plus a step that is the same in every lane: a constant
  // of the register once the loops are unrolled (the score's row shift multiplies it).
  ATTNJIT_HD static constexpr int acc_col_lane(int lane) { return 2 * (lane & 3); }
  ATTNJIT_HD static constexpr int acc_col_step(int j, int e) { return 8 * j + (e & 1); }
  static_assert(acc_col_step(5, 3) == 8 * 5 + 1,
                "OnlineSoftmax::exponentiate adds the key slope times 8j + c (RowShift)");

  // The A fragment of P for key-step kk re-uses the S accumulators: register `reg` packs elements
  // (p_elem(reg, 0), p_elem(reg, 1)) (low, high half) of n-tile p_tile(kk, reg).
  // a0 = row g of 2kk, a1 = row g+8 of 2kk, a2 / a3 the same of 2kk+1.
  ATTNJIT_HD static constexpr int p_tile(int kk, int reg) { return 2 * kk + (reg >> 1); }
  ATTNJIT_HD static constexpr int p_elem(int reg, int half) { return 2 * (reg & 1) + half; }

  // Output staging in the warp's own rows of the Q tile: lane writes elements (2r, 2r+1) of
  // d-tile j of m-tile mt (row g + 8r, cols 8j + 2tig, +1) as one 32-bit word at
  // o_stage(o_lane(lane, r), mt, j) from the warp's first row.
  // Note: 4 * tig < 16 stays inside the 16-byte unit, below the bits the XOR touches.
  ATTNJIT_HD static int o_lane(int lane, int r) {
    return QTile::lane_offset((lane >> 2) + 8 * r, 0) + 4 * (lane & 3);
  }
  ATTNJIT_HD static int o_stage(int o_lane, int mt, int j) {
    return QTile::fixed_offset(16 * mt, j) + (o_lane ^ QTile::xor_offset(j));
  }
  // Then 16-byte reads: pass i of the lane reads (o_read_row, o_read_chunk) of the warp's rows.
  static constexpr int kWarpUnits = kWarpRows * QTile::kChunks;
  static_assert(kWarpUnits % 32 == 0, "a warp's output rows are whole 16-byte passes");
  static constexpr int kOutputPasses = kWarpUnits / 32;
  ATTNJIT_HD static constexpr int o_read_row(int lane, int i) {
    return (lane + 32 * i) / QTile::kChunks;
  }
  ATTNJIT_HD static constexpr int o_read_chunk(int lane, int i) {
    return (lane + 32 * i) % QTile::kChunks;
  }
  ATTNJIT_HD static int o_read(int lane, int i) {
    return QTile::offset(o_read_row(lane, i), o_read_chunk(lane, i));
  }
};

#if ATTNJIT_KERNEL_CODE

// DECODING: the decoding features (split-KV, packed GQA: FwdParams) are read from the parameters.
// The sm80 kernel has them; the sm90 kernel, which reuses this block state and row math, has them
// only in its split-KV kernel (kSm90FeatureSplitKv; decoding steps run on the sm80 kernel), so
// that its standard three-consumer schedules stay inside their 160 registers.
// SKIP_IDLE_WARPS: a warp whose rows are all past the block's last query skips the math (the
// decoding entry, whose blocks are mostly such warps). Not in the 128-row kernels: the branch
// cost ptxas 17-19 registers there (D=128, sm_80: 203 -> 220 noop, 215 -> 234 causal) for a
// saving only in a call's last query tile.
// SEQUENCE_WORDS_AT: where a kernel with sequence tables keeps its block's sequence words, a byte
// offset into the dynamic shared memory; -1: in this kernel's tile window (kSequenceWords). The
// sm90 kernel, whose layout has no tile window, gives its own place, and a DECODING one leaves
// the 16 bytes before it to a balanced split's words (balanced_split_words).
// PACKED_QUERIES: whether a packed GQA launch's rows may hold several queries of each query head
// (kPackedQueries): the sm80 decoding entry's, and the sm90 split kernel's.
// MIN_SPLIT_TILES: the fewest key tiles of a balanced split's slice (kMinSplitTiles; the sm90
// split kernel's kSm90MinSplitTiles).
template <typename VARIANT, typename ELEM, int HEAD_DIM, int BLOCK_M, int BLOCK_N, int NUM_WARPS,
          int NUM_STAGES, bool DECODING = false, bool SKIP_IDLE_WARPS = false,
          int SEQUENCE_WORDS_AT = -1, bool PACKED_QUERIES = SKIP_IDLE_WARPS,
          int MIN_SPLIT_TILES = kMinSplitTiles>
struct AttentionForward {
  static_assert(HEAD_DIM == 32 || HEAD_DIM == 64 || HEAD_DIM == 96 || HEAD_DIM == 128 ||
                    HEAD_DIM == 256,
                "unsupported head dim");
  static_assert(BLOCK_M % (16 * NUM_WARPS) == 0, "each warp owns whole 16-row m-tiles");
  static_assert(BLOCK_N % 16 == 0, "key tiles are whole mma k-steps");
  static_assert(NUM_STAGES >= 2, "the cp.async pipeline needs at least two stages");

  using Layout = ForwardLayout<HEAD_DIM, BLOCK_M, BLOCK_N, NUM_WARPS>;
  static constexpr int kThreads = NUM_WARPS * 32;
  static constexpr int kMTiles = Layout::kMTiles;
  // Whether this kernel folds the softmax scale into the exponent (apply_scores). Not at head
  // dim 32, whose two blocks per SM leave 128 registers a thread: there the fold's extra live
  // value made ptxas spill the prefix-LM kernel (4 / 8 bytes, sm_80).
  static constexpr bool kFoldScale = HEAD_DIM >= 64;
  // Whether a partial tile inside the bounds takes a path of its own (apply_scores), without the
  // bounds' tests in its elements. Not at head dim 32 (128 registers a thread): there the second
  // copy of the element loop made ptxas spill the causal kernel (16 / 24 bytes, sm_80 and sm_90).
  static constexpr bool kPartialTilesOwnPath = HEAD_DIM >= 64;
  // Whether a zero-filled row's copy gets row 0's address (load_tile_async's SAFE_SOURCE): at
  // head dim 32, where the cheaper form made ptxas spill the document kernel (20 bytes, sm_80),
  // and where ATTNJIT_TUNE's sm80_safe_sources asks for it (to time the two forms).
#ifdef ATTNJIT_SM80_SAFE_SOURCES
  static constexpr bool kSafeSources = true;
#else
  static constexpr bool kSafeSources = HEAD_DIM < 64;
#endif
  // Whether keys and values are read through a paged cache's page table (FwdParams::kv_pages):
  // only in the kernels generated for paged calls (PagedKvOf), so that the dense kernels' code is
  // what it was.
  static constexpr bool kPagedKv = PagedKvOf<VARIANT>::kPaged;
  // Whether the block's sequence has its own extent (FwdParams::sequences, SequenceTablesOf):
  // its query and key counts are then `sequence`'s, not the call's q_len and kv_len, which size
  // the grid and bound them.
  static constexpr bool kSequenceTables = SequenceTablesOf<VARIANT>::kTables;
  static_assert(!kSequenceTables || SEQUENCE_WORDS_AT >= 0 ||
                    NUM_WARPS <= kMaxForwardWarps - kSequenceWords,
                "the sequence's words lie past the warps' words of the tile window");
  // Whether a split decoding call's slices may be balanced over its sequences' key counts
  // (FwdParams::split_slots): only a kernel with sequence tables has per-sequence counts. The
  // balanced slice's words lie in the sm80 kernel's tile window, or in the 16 bytes before the
  // sequence words of a kernel that gives SEQUENCE_WORDS_AT (the sm90 split kernel's).
  static constexpr bool kBalancedSplits = DECODING && kSequenceTables;
  static_assert(!kBalancedSplits || SEQUENCE_WORDS_AT >= 16 ||
                    (SEQUENCE_WORDS_AT < 0 && NUM_WARPS <= kMaxForwardWarps - kBalancedSplitWords),
                "the balanced split's words lie past the warps' words of the tile window, or "
                "before the sequence words");
  // Whether the score's per-row terms reach the softmax as a shift per row and key tile, and
  // whether the softmax adds a multiple of each column's step too (apply_scores, RowShift).
  static constexpr bool kRowShift = ScoreRowShiftOf<VARIANT>::kShift;
  static constexpr bool kKeySlope = ScoreRowShiftOf<VARIANT>::kKeySlope;
  // The shift of each row a thread holds (r = 0, 1 of each m-tile) and the key slope, in the
  // units of the scores apply_scores leaves (OnlineSoftmax::exponentiate adds them); zeros
  // without a row shift.
  using RowShifts = RowShift[kMTiles];
  // Whether O's rescale is skipped when no row of the warp moved its max
  // (OnlineSoftmax::rescale_output): not up to head dim 128, where the ballot's branch kept
  // ptxas from interleaving the exponentials with P V and cost 13% (noop D=128 on an H200); kept
  // at 256, where without it ptxas spilled the document kernel (16 bytes, sm_90) and which was
  // not timed either way.
  static constexpr bool kSkipUnmovedRescale = HEAD_DIM > 128;
  static constexpr int kWarpRows = Layout::kWarpRows;
  static constexpr int kKSteps = HEAD_DIM / 16;  // k-steps of S = Q K^T
  static constexpr int kNTiles = BLOCK_N / 8;    // n8 tiles of S
  static constexpr int kDTiles = HEAD_DIM / 8;   // n8 tiles of O
  // Q fragments stay in registers while they are small; otherwise they are re-read from the
  // resident smem tile at every k-step (as FlashAttention-2 does), which keeps the accumulators
  // of large head dims under 255 registers.
  static constexpr bool kQInRegisters = kMTiles * HEAD_DIM <= 128;
  using QTile = SwizzledTile<BLOCK_M, HEAD_DIM>;
  using KVTile = SwizzledTile<BLOCK_N, HEAD_DIM>;
  static constexpr int kSmemBytes =
      QTile::kBytes + 2 * NUM_STAGES * KVTile::kBytes + kTileWindowBytes;
  static_assert(NUM_WARPS <= kMaxForwardWarps, "the tile window has one word per warp");
  static_assert(kSmemBytes == forward_smem_bytes(HEAD_DIM, BLOCK_M, BLOCK_N, NUM_STAGES),
                "host and device disagree on the shared-memory size");

  static constexpr float kLog2e = 1.4426950408889634f;
  static constexpr float kLn2 = 0.6931471805599453f;

  using QFragments = unsigned[kQInRegisters ? kKSteps : 1][kMTiles][4];
  using Accumulators = float[kMTiles][kDTiles][4];
  // The variant's hoisted values (codegen/lower_hooks.hpp) of the two rows r = 0, 1 of each
  // m-tile a thread holds (Layout::acc_row with e = 2r): computed once per block.
  using RowValues = typename VARIANT::Row[kMTiles][2];

  // Per-block constants.
  const FwdParams& params;
  // The block's key tiles are [kv_tile_begin, num_kv_tiles): all of them, or its slice under
  // split-KV (FwdParams::num_splits). q0, q_end: the block's rows [q0, q_end) of the
  // launch's problem; with packed GQA those rows are query heads (FwdParams::pack_gqa), and the
  // hooks see the one real query instead (hook_q, hook_q_len).
  int b = 0, h = 0, h_kv = 0, q0 = 0, q_end = 0, kv_tile_begin = 0, num_kv_tiles = 0;
  // The block's sequence: its rows in packed tensors and its lengths (kSequenceTables only).
  // Note: read here only while the block sets up; later uses read its copy in shared memory
  // (sequence_word), which costs a shared load where this would hold registers through the
  // tile loop (the head-dim-32 kernels' 128 spilled 24-64 bytes with them).
  SequenceExtent sequence{0, 0, 0, 0};
  typename VARIANT::Block block_values;
  // Where the Q tile (BLOCK_M x HEAD_DIM, SwizzledTile layout) lies: the output is staged there.
  unsigned char* q_tile;
  // The score's per-block factor and constants (codegen/factor_score.hpp), for variants with a
  // score expression.
  typename VARIANT::ScoreConstants score_constants;

  ATTNJIT_DEVICE explicit AttentionForward(const FwdParams& p)
      : params(p), q_tile(attnjit_dynamic_smem) {}

  // Note: the sm90 kernel (attention_fwd_sm90.cuh) reuses this block state and row math for its
  // consumer warps: wgmma's accumulator layout is, per warp, this kernel's with one m-tile, so
  // assign_block, init_row_values, apply_scores and store_output serve both kernels.

  // The block's (batch, head, query tile): work item number `linear block index` (assign_work).
  // False for a block past the last tile.
  ATTNJIT_DEVICE bool assign_block() {
    return assign_work(static_cast<long long>(blockIdx.y) * gridDim.x +
                       static_cast<long long>(blockIdx.x));
  }

  // The query index and query length the mask and score hooks see for row q_idx of the launch's
  // problem: the same, except with packed GQA, where row q_idx is query q_idx / pack_gqa of a
  // query head of the group (FwdParams::pack_gqa): with one query, index 0 of 1.
  // Note: read from the parameters at each use (an operand from the constant bank), not kept in
  // a register through the loop: the head-dim-32 causal kernel spilled at its 128 registers.
  ATTNJIT_DEVICE bool packed() const { return DECODING && params.pack_gqa > 1; }
  // Whether packed steps may have several queries: only in the sm80 decoding entry and the sm90
  // split kernel (the host packs them only where one of those runs the call), so the sm80
  // forward entry keeps its one-query code.
  static constexpr bool kPackedQueries = DECODING && PACKED_QUERIES;
  // Note: a packed step's rows are below kPackedRowLimit and its group at most 32
  // (gqa_pack_group): packed_row_query's exact range.
  ATTNJIT_DEVICE int hook_q(int q_idx) const {
    if (!packed()) return q_idx;
    return kPackedQueries ? packed_row_query(q_idx, params.pack_gqa_inverse) : 0;
  }
  // The launch rows a block takes: BLOCK_M, or a packed sm90 block's whole queries
  // (FwdParams::pack_block_rows: a group that does not divide BLOCK_M leaves the last rows of
  // the tile without a query).
  ATTNJIT_DEVICE int block_rows() const {
    if constexpr (kPackedQueries) {
      if (params.pack_block_rows > 0) return params.pack_block_rows;
    }
    return BLOCK_M;
  }
  // Where the block's stored rows end: seq_q_len(), or with packed rows the block's own end
  // (block_rows(): the rows past a packed sm90 block's whole queries are the next block's).
  ATTNJIT_DEVICE int stored_rows_end() const {
    if constexpr (kPackedQueries) {
      return min(q0 + block_rows(), seq_q_len());
    } else {
      return seq_q_len();
    }
  }
  // The hooks' query of each row a thread holds (hook_q of q0 + Layout::acc_row), taken once per
  // tile where packed rows make it a multiply, a shift and a select (kPackedQueries: the sm90
  // split kernel, whose relative-bias score grew by 1584 instructions with it per element;
  // sm_90a, head dim 128), and at each use elsewhere, where it is the row or a select.
  struct HookRows {
    int q[kPackedQueries ? kMTiles : 1][2];
    ATTNJIT_DEVICE HookRows(const AttentionForward& kernel, int warp, int lane) {
      if constexpr (kPackedQueries) {
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            q[mt][r] = kernel.hook_q(kernel.q0 + Layout::acc_row(warp, lane, mt, 2 * r));
          }
        }
      }
    }
    // Element e of m-tile mt, whose row is q_idx.
    ATTNJIT_DEVICE int at(const AttentionForward& kernel, int q_idx, int mt, int e) const {
      if constexpr (kPackedQueries) {
        return q[mt][e >> 1];
      } else {
        return kernel.hook_q(q_idx);
      }
    }
  };
  // The block's sequence's query and key counts and its first packed query row: the call's, or
  // its own (kSequenceTables).
  ATTNJIT_DEVICE int seq_q_len() const {
    if constexpr (kSequenceTables) {
      return sequence_word(0);
    } else {
      return params.q_len;
    }
  }
  ATTNJIT_DEVICE int seq_kv_len() const {
    if constexpr (kSequenceTables) {
      return sequence_word(1);
    } else {
      return params.kv_len;
    }
  }
  ATTNJIT_DEVICE int seq_q_row0() const {
    if constexpr (kSequenceTables) {
      return sequence_word(2);
    } else {
      return 0;
    }
  }
  ATTNJIT_DEVICE static unsigned char* sequence_words() {
    if constexpr (SEQUENCE_WORDS_AT >= 0) {
      return attnjit_dynamic_smem + SEQUENCE_WORDS_AT;
    } else {
      return attnjit_dynamic_smem + kSmemBytes - kTileWindowBytes +
             4 * (kMaxForwardWarps - kSequenceWords);
    }
  }
  ATTNJIT_DEVICE static int sequence_word(int i) {
    return static_cast<int>(load_shared_u32(sequence_words() + 4 * i));
  }
  ATTNJIT_DEVICE int hook_q_len() const {
    if (!packed()) return seq_q_len();
    return kPackedQueries ? params.pack_q_len : 1;
  }
  // Row q_idx's place among its (batch, head)'s rows of the call's own layout, which lse and the
  // split-KV partials keep: with packed queries, query head q_idx % pack_gqa's query q_idx /
  // pack_gqa.
  ATTNJIT_DEVICE int call_row(int q_idx) const {
    if (!kPackedQueries || !packed()) return q_idx;
    const int query = packed_row_query(q_idx, params.pack_gqa_inverse);
    return (q_idx - query * params.pack_gqa) * params.pack_q_len + query;
  }
  // Row q_idx's offset in elements from its (batch, head)'s first row of out.
  ATTNJIT_DEVICE long long output_row_offset(int q_idx) const {
    if (!kPackedQueries || !packed()) return q_idx * params.o_stride[2];
    const int query = packed_row_query(q_idx, params.pack_gqa_inverse);
    return (q_idx - query * params.pack_gqa) * params.o_stride[2] + query * params.pack_o_stride;
  }

  // Work item `linear`'s (batch, head, query tile), head-major with heavy query tiles first (see
  // the header comment). False past the last item. A persistent sm90 block walks several items
  // in this order, a plain block computes the one of its own index.
  // Under split-KV the slices of one query tile are consecutive items (after its query tiles:
  // item = ((bh * num_splits + split) * num_q_tiles + reversed q tile).
  ATTNJIT_DEVICE bool assign_work(long long linear) {
    const int rows = block_rows();
    const int num_q_tiles = (params.q_len + rows - 1) / rows;
    const int num_bh = params.batch * params.num_heads_q;
    const int num_splits = DECODING ? params.num_splits : 1;
    if (linear >= static_cast<long long>(num_q_tiles) * num_bh * num_splits) return false;
    const int q_tile_index = num_q_tiles - 1 - static_cast<int>(linear % num_q_tiles);
    const long long slot = linear / num_q_tiles;
    int split = static_cast<int>(slot % num_splits);
    int bh = static_cast<int>(slot / num_splits);
    int slice_tiles = DECODING ? params.split_tiles : 0;
    if constexpr (kBalancedSplits) {
      if (params.split_slots != nullptr) {
        const BalancedSlice slice = balanced_slice(slot);
        if (slice.slices == 0) return false;  // a slot past every sequence's slices
        bh = slice.b * params.num_heads_q + slice.h;
        split = slice.split;
        slice_tiles = slice.tiles;
        if (split == 0 && threadIdx.x == 0) {
          params.split_slots[2 * bh] = static_cast<int>(slot);
          params.split_slots[2 * bh + 1] = slice.slices;
        }
      }
    }
    b = bh / params.num_heads_q;
    h = bh % params.num_heads_q;
    h_kv = h / (params.num_heads_q / params.num_heads_kv);
    q0 = q_tile_index * rows;
    if constexpr (kSequenceTables) {
      sequence = sequence_extent(params.sequences, b, params.q_len, params.kv_len);
      // Note: the block's threads all assign their work here, before any other use of the window.
      if (threadIdx.x == 0) {
        store_shared_32(sequence_words(), static_cast<unsigned>(sequence.q_len));
        store_shared_32(sequence_words() + 4, static_cast<unsigned>(sequence.kv_len));
        store_shared_32(sequence_words() + 8, static_cast<unsigned>(sequence.q_row0));
      }
      __syncthreads();
      // Note: a shorter sequence's query tiles past its end have no rows: the block ends here.
      if (q0 >= sequence.q_len) return false;
    }
    q_end = min(q0 + rows, seq_q_len());
    num_kv_tiles = (seq_kv_len() + BLOCK_N - 1) / BLOCK_N;
    if (num_splits > 1) {
      kv_tile_begin = min(split * slice_tiles, num_kv_tiles);
      num_kv_tiles = min(kv_tile_begin + slice_tiles, num_kv_tiles);
    }
    block_values =
        VARIANT::block(params.args, b, h, hook_q_len(), seq_kv_len(), params.num_heads_q);
    if constexpr (VARIANT::kHasScore) {
      score_constants = VARIANT::score_constants(block_values, params.args, params.scale, b, h,
                                                 hook_q_len(), seq_kv_len(), params.num_heads_q);
    }
    return true;
  }

  // A balanced split's slice for slot `slot` (FwdParams::split_slots): head h's slots are
  // [h * S, (h + 1) * S), S = batch * num_splits, and sequence b takes n_b = max(1, ceil(t_b / c))
  // consecutive ones of them (t_b its key tiles; an empty sequence's one slot writes its -inf
  // LSE), slice i being its tiles [i * c, (i + 1) * c). c, the tiles a slice, is the smallest
  // that fits every sequence's slices into S, searched among 32 candidates in one pass, one a
  // lane (balanced_chunk_search, fwd_config.cuh). slices == 0: the slot is past every
  // sequence's (an idle block). Warp 0 computes it from the
  // sequence tables (each sequence's count read a few times, from L1 after the first) and hands
  // it over in shared memory; block-uniform (a barrier). The host balances only calls whose
  // batch * (key tiles + 1) fits an int (plan_split). A slice keeps at least MIN_SPLIT_TILES
  // tiles where the slots allow.
  struct BalancedSlice {
    int b, h, split, slices, tiles;
  };
  ATTNJIT_DEVICE static unsigned char* balanced_split_words() {
    if constexpr (SEQUENCE_WORDS_AT >= 0) {
      return attnjit_dynamic_smem + SEQUENCE_WORDS_AT - 4 * kBalancedSplitWords;
    } else {
      return attnjit_dynamic_smem + kSmemBytes - kTileWindowBytes +
             4 * (2 * kMaxForwardWarps - kBalancedSplitWords);
    }
  }
  ATTNJIT_DEVICE BalancedSlice balanced_slice(long long slot) const {
    const int per_head = params.batch * params.num_splits;
    unsigned char* const words = balanced_split_words();
    if (threadIdx.x < 32) {
      const int lane = static_cast<int>(threadIdx.x);
      const int own = static_cast<int>(slot % per_head);  // the slot among its head's
      const auto tiles_of = [&](int seq) {
        const int keys = sequence_extent(params.sequences, seq, params.q_len, params.kv_len).kv_len;
        return (keys + BLOCK_N - 1) / BLOCK_N;
      };
      int total = 0;
      for (int seq = lane; seq < params.batch; seq += 32) total += tiles_of(seq);
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) {
        total += __shfl_xor_sync(0xffffffffu, total, offset);
      }
      const int candidate =
          balanced_chunk_candidate(
              balanced_chunk_search(total, per_head, params.batch, MIN_SPLIT_TILES), lane);
      int used = 0;
      for (int seq = 0; seq < params.batch; ++seq)
        used += balanced_slices(tiles_of(seq), candidate);
      // Note: lane 31's candidate always fits, so the ballot is never empty.
      const unsigned fits = __ballot_sync(0xffffffffu, used <= per_head);
      const int chunk = __shfl_sync(0xffffffffu, candidate, __ffs(static_cast<int>(fits)) - 1);
      // The sequence whose slots hold `own`: an inclusive scan of n_b over 32 sequences at a time.
      int before = 0;  // slots of the sequences before this pass's
      int found = -1, split = 0, slices = 0;
      for (int first = 0; first < params.batch && found < 0; first += 32) {
        const int seq = first + lane;
        const int n = seq < params.batch ? balanced_slices(tiles_of(seq), chunk) : 0;
        int inclusive = n;
#pragma unroll
        for (int offset = 1; offset < 32; offset *= 2) {
          const int up = __shfl_sync(0xffffffffu, inclusive, lane - offset);
          if (lane >= offset) inclusive += up;
        }
        const int begin = before + inclusive - n;
        const unsigned hit = __ballot_sync(0xffffffffu, n > 0 && own >= begin && own < begin + n);
        if (hit != 0u) {
          const int at = __ffs(static_cast<int>(hit)) - 1;
          found = first + at;
          split = own - __shfl_sync(0xffffffffu, begin, at);
          slices = __shfl_sync(0xffffffffu, n, at);
        }
        before += __shfl_sync(0xffffffffu, inclusive, 31);
      }
      if (lane == 0) {
        store_shared_32(words, static_cast<unsigned>(found));
        store_shared_32(words + 4, static_cast<unsigned>(split));
        store_shared_32(words + 8, static_cast<unsigned>(found < 0 ? 0 : slices));
        store_shared_32(words + 12, static_cast<unsigned>(chunk));
      }
    }
    __syncthreads();
    return {static_cast<int>(load_shared_u32(words)), static_cast<int>(slot / per_head),
            static_cast<int>(load_shared_u32(words + 4)),
            static_cast<int>(load_shared_u32(words + 8)),
            static_cast<int>(load_shared_u32(words + 12))};
  }

  // The variant's hoisted values of the rows warp `warp`'s lane holds.
  ATTNJIT_DEVICE void init_row_values(int warp, int lane, RowValues& row_values) const {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        row_values[mt][r] = VARIANT::row(block_values, params.args, b, h,
                                         hook_q(q0 + Layout::acc_row(warp, lane, mt, 2 * r)),
                                         hook_q_len(), seq_kv_len(), params.num_heads_q);
      }
    }
  }

  ATTNJIT_DEVICE int classify(int tile) const { return classify_range(tile, tile + 1); }

  // The class of key tiles [first, end) taken together: empty means every one of them is empty
  // (interval evaluation is monotone in the ranges).
  ATTNJIT_DEVICE int classify_range(int first, int end) const {
    TileBounds bounds;
    bounds.b = b;
    bounds.h = h;
    bounds.q_begin = hook_q(q0);
    bounds.q_end = packed() ? hook_q(q_end - 1) + 1 : q_end;
    bounds.kv_begin = first * BLOCK_N;
    bounds.kv_end = min(end * BLOCK_N, seq_kv_len());
    bounds.q_len = hook_q_len();
    bounds.kv_len = seq_kv_len();
    bounds.num_heads = params.num_heads_q;
    return static_cast<int>(VARIANT::classify(params.args, bounds));
  }

  // The kv tiles of this block's query tile are classified kWindowTiles at a time, one per
  // thread of the block (warp w, lane l: tile begin + 32 w + l), and the answers kept in shared
  // memory as bit masks (non-empty, full; word w from warp w's ballots). Walking to the next kept
  // tile is then a find-first-set over those words, and classification costs one parallel step
  // (plus two barriers) per kWindowTiles tiles: no thread repeats another's work, and no step
  // waits on the previous one (for tensor masks each step is a global load of a summary).
  // Note: the window's position is block-uniform (every thread calls next_tile with the same
  // tiles, in the same order), so the barriers in classify_window are reached by all threads.
  static constexpr int kWindowTiles = 32 * NUM_WARPS;
  struct TileWindow {
    int begin = -kWindowTiles;  // the window is [begin, begin + kWindowTiles); none yet
    bool empty = false;         // no tile of it is kept
  };

  ATTNJIT_DEVICE static unsigned window_word(int which, int word) {
    return load_shared_u32(attnjit_dynamic_smem + kSmemBytes - kTileWindowBytes +
                           4 * (which * kMaxForwardWarps + word));
  }

  ATTNJIT_DEVICE void classify_window(int begin, TileWindow& window) const {
    const int warp = static_cast<int>(threadIdx.x / 32);
    const int tile = begin + static_cast<int>(threadIdx.x);
    const int tile_class = tile < num_kv_tiles ? classify(tile) : static_cast<int>(kTileEmpty);
    const unsigned nonempty = __ballot_sync(0xffffffffu, tile_class != kTileEmpty);
    const unsigned full = __ballot_sync(0xffffffffu, tile_class == kTileFull);
    unsigned char* words = attnjit_dynamic_smem + kSmemBytes - kTileWindowBytes;
    __syncthreads();  // every thread is done reading the previous window
    if (threadIdx.x % 32 == 0) {
      store_shared_32(words + 4 * warp, nonempty);
      store_shared_32(words + 4 * (kMaxForwardWarps + warp), full);
    }
    // Note: the barrier's OR tells every thread whether any tile of the window is kept.
    window.empty = __syncthreads_or(nonempty != 0u) == 0;
    window.begin = begin;
  }

  // After a window with no kept tile: the first tile of the first 32-tile stretch at or after
  // `tile` that one evaluation over the stretch's whole key range does not find empty, looking
  // kWindowTiles stretches ahead per step (thread t takes [tile + 32 t, tile + 32 t + 32)); the
  // words of the window are reused for the stretches' bits. num_kv_tiles when none. A sliding
  // window or a document far from key 0 then costs a step per 32 windows instead of a window
  // each. With tensor summaries (document ids) a thread's evaluation reads its stretch's 32
  // per-tile summaries, independent loads, so a step costs about what a window does.
  // Block-uniform, like next_tile.
  ATTNJIT_DEVICE int skip_empty_stretches(int tile) const {
    const int warp = static_cast<int>(threadIdx.x / 32);
    unsigned char* words = attnjit_dynamic_smem + kSmemBytes - kTileWindowBytes;
    for (; tile < num_kv_tiles; tile += 32 * kWindowTiles) {
      const int first = tile + 32 * static_cast<int>(threadIdx.x);
      const int stretch_class = first < num_kv_tiles
                                    ? classify_range(first, min(first + 32, num_kv_tiles))
                                    : static_cast<int>(kTileEmpty);
      const unsigned kept = __ballot_sync(0xffffffffu, stretch_class != kTileEmpty);
      __syncthreads();  // every thread is done reading the words
      if (threadIdx.x % 32 == 0) store_shared_32(words + 4 * warp, kept);
      if (__syncthreads_or(kept != 0u) != 0) {
        for (int w = 0; w < NUM_WARPS; ++w) {
          const unsigned bits = window_word(0, w);
          if (bits != 0u) return tile + 32 * (32 * w + __ffs(static_cast<int>(bits)) - 1);
        }
      }
    }
    return num_kv_tiles;
  }

  // First tile >= `tile` that is not empty (num_kv_tiles when none), and its class.
  ATTNJIT_DEVICE int next_tile(int tile, int& tile_class, TileWindow& window) const {
    if constexpr (!VARIANT::kHasMask) {
      tile_class = kTileFull;
      return tile;
    } else {
      while (tile < num_kv_tiles) {
        if (tile < window.begin || tile >= window.begin + kWindowTiles) {
          if (window.empty) {
            tile = skip_empty_stretches(tile);
            if (tile >= num_kv_tiles) break;
          }
          classify_window(tile, window);
        }
        const int offset = tile - window.begin;
        const int word = offset / 32;
        const unsigned ahead = window_word(0, word) >> (offset % 32);
        if (ahead != 0u) {
          const int found = offset + __ffs(static_cast<int>(ahead)) - 1;
          tile_class = (window_word(1, word) >> (found % 32)) & 1u ? kTileFull : kTilePartial;
          return window.begin + found;
        }
        tile = window.begin + 32 * (word + 1);
      }
      tile_class = kTileEmpty;
      return num_kv_tiles;
    }
  }

  ATTNJIT_DEVICE void run() {
    const int thread = threadIdx.x;
    const int warp = thread / 32;
    const int lane = thread % 32;

    // A split call's merge follows this kernel: it may launch as soon as every block has
    // started (grid_dependency.cuh); it waits for this kernel's partials itself.
    if (DECODING && params.num_splits > 1) launch_dependent_grids();

    // ---- Work assignment (head-major, heavy query tiles first; see the header comment).
    if (!assign_block()) return;

    // Note: packed sequences' tensors have a batch stride of 0 (the host's) and the sequence's
    // first row; the others' first row is 0.
    const unsigned short* q_base = static_cast<const unsigned short*>(params.q) +
                                   b * params.q_stride[0] + h * params.q_stride[1] +
                                   sequence.q_row0 * params.q_stride[2];
    // Note: a paged call's pools start at page 0; its sequence is its row of the page table. The
    // kernel with sequence tables serves dense calls too (variable-length sequences without a
    // page table), as one page of the batch entry's rows (load_paged_kv_async's DENSE_PAGE: the
    // host passes a null table and pages of kDensePageRows rows): page b of the batch stride, or
    // with packed keys (a batch stride of 0) the sequence's first row.
    const long long kv_batch = kPagedKv ? 0 : b;
    const long long kv_row0 = sequence.kv_row0;
    const unsigned short* k_base = static_cast<const unsigned short*>(params.k) +
                                   kv_batch * params.k_stride[0] + h_kv * params.k_stride[1] +
                                   kv_row0 * params.k_stride[2];
    const unsigned short* v_base = static_cast<const unsigned short*>(params.v) +
                                   kv_batch * params.v_stride[0] + h_kv * params.v_stride[1] +
                                   kv_row0 * params.v_stride[2];

    // ---- Shared memory: [Q tile][K stage 0..S-1][V stage 0..S-1].
    const unsigned q_smem = smem_address(attnjit_dynamic_smem);
    const unsigned k_smem = q_smem + QTile::kBytes;
    const unsigned v_smem = k_smem + NUM_STAGES * KVTile::kBytes;

    auto load_kv = [&](int tile, int stage) {
      if constexpr (kPagedKv) {
        const int* pages =
            !kSequenceTables || params.kv_pages != nullptr
                ? params.kv_pages + static_cast<long long>(b) * params.kv_pages_stride
                : nullptr;
        load_paged_kv_async<BLOCK_N, HEAD_DIM, kThreads, kSafeSources, kSequenceTables>(
            k_smem + stage * KVTile::kBytes, v_smem + stage * KVTile::kBytes, k_base,
            params.k_stride, v_base, params.v_stride, pages, params.kv_page,
            params.kv_num_pages, tile * BLOCK_N, seq_kv_len(), thread, b);
      } else {
        load_tile_async<BLOCK_N, HEAD_DIM, kThreads, kSafeSources>(
            k_smem + stage * KVTile::kBytes, k_base, params.k_stride[2], tile * BLOCK_N,
            seq_kv_len(), thread);
        load_tile_async<BLOCK_N, HEAD_DIM, kThreads, kSafeSources>(
            v_smem + stage * KVTile::kBytes, v_base, params.v_stride[2], tile * BLOCK_N,
            seq_kv_len(), thread);
      }
    };

    // ---- Prologue. Commit groups: [Q], then one per pipeline slot, always committed (possibly
    // empty) so that the group count is the same in every thread and every iteration.
    if (kPackedQueries && packed() && params.pack_q_len > 1) {
      load_packed_rows_async<BLOCK_M, HEAD_DIM, kThreads>(
          q_smem, q_base, params.q_stride[2], params.pack_q_stride, params.pack_gqa,
          params.pack_gqa_inverse, q0, params.q_len, thread);
    } else {
      load_tile_async<BLOCK_M, HEAD_DIM, kThreads, kSafeSources>(q_smem, q_base,
                                                                 params.q_stride[2], q0,
                                                                 seq_q_len(), thread);
    }
    cp_async_commit();
    // Launched after the call's tensor summaries, the kernel may have started while they still
    // run (grid_dependency.cuh): Q (the caller's, complete before the call's first kernel began)
    // is on its way, and the first tile classification reads the summaries.
    wait_for_prerequisite_grids();
    // Note: a split decoding block finds its slice of the kept keys (a classification step or
    // more) only now, with Q already on its way: neither needs the other (the classification's
    // words lie past the K/V stages).
    TileWindow window;
    if constexpr (DECODING && VARIANT::kHasMask) {
      if (params.num_splits > 1) slice_kept_span(window);
    }
    RowValues row_values;
    init_row_values(warp, lane, row_values);

    // ring_tile[i] / ring_class[i]: the tile in flight i iterations ahead (num_kv_tiles = none).
    // Note: indexed only with compile-time constants (unrolled), so it lives in registers.
    int ring_tile[NUM_STAGES];
    int ring_class[NUM_STAGES];
    int next_class;
    int next = next_tile(kv_tile_begin, next_class, window);
#pragma unroll
    for (int s = 0; s < NUM_STAGES - 1; ++s) {
      ring_tile[s] = next;
      ring_class[s] = next_class;
      if (next < num_kv_tiles) {
        load_kv(next, s);
        next = next_tile(next + 1, next_class, window);
      }
      cp_async_commit();
    }
    ring_tile[NUM_STAGES - 1] = num_kv_tiles;
    ring_class[NUM_STAGES - 1] = kTileEmpty;

    // Warp w owns rows [w * kWarpRows, (w + 1) * kWarpRows) of the block; m-tile mt is rows
    // 16 * mt .. 16 * mt + 15 of those.
    const unsigned q_warp = q_smem + Layout::q_warp_offset(warp);
    const int q_lane = Layout::q_lane(lane);
    QFragments q_frag;
    if constexpr (kQInRegisters) {
      // Note: NUM_STAGES - 1 groups may stay in flight: the oldest one, Q, has landed.
      cp_async_wait<NUM_STAGES - 1>();
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kKSteps; ++kk) load_q_fragments(q_warp, q_lane, kk, q_frag[kk]);
    }

    Accumulators acc_o;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int j = 0; j < kDTiles; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_o[mt][j][e] = 0.0f;
      }
    }
    OnlineSoftmax softmax[kMTiles];
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) softmax[mt].init();

    const bool warp_has_rows = !SKIP_IDLE_WARPS || q0 + Layout::warp_row0(warp) < q_end;
    int load_stage = NUM_STAGES - 1;
    int compute_stage = 0;
    // ---- Main loop: iteration i consumes the i-th non-empty tile and prefetches the
    // (i + NUM_STAGES - 1)-th into the stage that iteration i - 1 consumed.
    while (ring_tile[0] < num_kv_tiles) {
      // Note: committed so far: 1 (Q) + (NUM_STAGES - 1) + i groups; the i + 2 oldest (Q and
      // tiles 0..i) must be complete, so NUM_STAGES - 2 may stay in flight. The barrier makes
      // every thread's copies visible and guarantees iteration i - 1 is done reading the stage
      // that is overwritten next.
      cp_async_wait<NUM_STAGES - 2>();
      __syncthreads();

      ring_tile[NUM_STAGES - 1] = next;
      ring_class[NUM_STAGES - 1] = next_class;
      if (next < num_kv_tiles) {
        load_kv(next, load_stage);
        next = next_tile(next + 1, next_class, window);
      }
      cp_async_commit();
      load_stage = load_stage + 1 == NUM_STAGES ? 0 : load_stage + 1;

      // Note: a warp all of whose rows are past the block's last query (a decoding block of a
      // few rows) skips the math but still loads and meets the barriers; its softmax state stays
      // empty and its rows are never stored. Warp-uniform, and compute_tile has no barrier.
      if (warp_has_rows) {
        compute_tile(ring_tile[0], ring_class[0], k_smem + compute_stage * KVTile::kBytes,
                     v_smem + compute_stage * KVTile::kBytes, q_warp, q_lane, q_frag, warp, lane,
                     row_values, acc_o, softmax);
      }
      compute_stage = compute_stage + 1 == NUM_STAGES ? 0 : compute_stage + 1;

#pragma unroll
      for (int s = 0; s < NUM_STAGES - 1; ++s) {
        ring_tile[s] = ring_tile[s + 1];
        ring_class[s] = ring_class[s + 1];
      }
    }

    // ---- Epilogue.
    // Note: drain every copy (only empty groups or, with no tile at all, Q may remain) and wait
    // for every warp before the Q space is reused for the output.
    cp_async_wait<0>();
    __syncthreads();
    store_output(acc_o, softmax, warp, lane);
  }

  // A fragments of Q for k-step kk, one per m-tile (Layout::q_fragment).
  ATTNJIT_DEVICE static void load_q_fragments(unsigned q_warp, int q_lane, int kk,
                                              unsigned (&a)[kMTiles][4]) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      ldmatrix_x4(q_warp + Layout::q_fragment(q_lane, mt, kk), a[mt][0], a[mt][1], a[mt][2],
                  a[mt][3]);
    }
  }

  ATTNJIT_DEVICE void compute_tile(int tile, int tile_class, unsigned k_tile, unsigned v_tile,
                                   unsigned q_warp, int q_lane, const QFragments& q_frag, int warp,
                                   int lane, const RowValues& row_values, Accumulators& acc_o,
                                   OnlineSoftmax (&softmax)[kMTiles]) const {
    // ---- S = Q K^T. B fragments from K (Layout::k_fragment); each serves every m-tile of the
    // warp.
    float acc_s[kMTiles][kNTiles][4];
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[mt][j][e] = 0.0f;
      }
    }
    const int k_lane = Layout::k_lane(lane);
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      unsigned a_smem[kQInRegisters ? 1 : kMTiles][4];
      if constexpr (!kQInRegisters) load_q_fragments(q_warp, q_lane, kk, a_smem);
      const unsigned(&a)[kMTiles][4] = select_q(q_frag, a_smem, kk);
#pragma unroll
      for (int p = 0; p < kNTiles / 2; ++p) {
        unsigned b0, b1, b2, b3;
        ldmatrix_x4(k_tile + Layout::k_fragment(k_lane, p, kk), b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          Mma<ELEM>::run(acc_s[mt][2 * p], a[mt], b0, b1);
          Mma<ELEM>::run(acc_s[mt][2 * p + 1], a[mt], b2, b3);
        }
      }
    }

    RowShifts shift{};
    const float score_scale =
        apply_scores<kFoldScale>(acc_s, tile, tile_class, warp, lane, row_values, shift);

#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      softmax[mt].template update<kFoldScale, kSkipUnmovedRescale, 0, kRowShift, kKeySlope>(
          acc_s[mt], acc_o[mt], score_scale, shift[mt]);
    }

    // ---- O += P V. The S accumulators of n-tiles 2kk, 2kk+1 are exactly the A fragment of
    // key-step kk (Layout::p_tile, p_elem); B fragments from V with ldmatrix.trans
    // (Layout::v_fragment).
    const int v_lane = Layout::v_lane(lane);
#pragma unroll
    for (int kk = 0; kk < kNTiles / 2; ++kk) {
      unsigned a[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) p_fragment(acc_s[mt], kk, a[mt]);
#pragma unroll
      for (int p = 0; p < kDTiles / 2; ++p) {
        unsigned b0, b1, b2, b3;
        ldmatrix_x4_trans(v_tile + Layout::v_fragment(v_lane, kk, p), b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          Mma<ELEM>::run(acc_o[mt][2 * p], a[mt], b0, b1);
          Mma<ELEM>::run(acc_o[mt][2 * p + 1], a[mt], b2, b3);
        }
      }
    }
  }

  // P's A fragment of key-step kk for one m-tile: the S accumulators of n-tiles 2kk, 2kk + 1
  // packed to ELEM (Layout::p_tile, p_elem). Also the A operand of the sm90 kernel's P V.
  ATTNJIT_DEVICE static void p_fragment(const float (&acc_s)[kNTiles][4], int kk,
                                        unsigned (&a)[4]) {
#pragma unroll
    for (int reg = 0; reg < 4; ++reg) {
      const float(&s)[4] = acc_s[Layout::p_tile(kk, reg)];
      a[reg] = ElemTraits<ELEM>::pack2(s[Layout::p_elem(reg, 0)], s[Layout::p_elem(reg, 1)]);
    }
  }

  // The tile's raw Q K^T products in `acc_s` become scores: the score hook applied, elements
  // outside the bounds or the mask -inf. Returns the factor that still turns them into log2
  // units, for OnlineSoftmax::exponentiate to fold into its exponent. Without a score hook that
  // factor is scale * log2(e); with one, the hook is evaluated in its factored form
  // (codegen/factor_score.hpp: log2(e) * score(qk * scale) == factor * score_core(qk)), e.g.
  // soft-capping as tanh(qk * (scale / cap)) with the factor log2(e) * cap. With FOLD_SCALE and
  // a positive, finite factor it is returned and not applied here (no multiply at all in a fully
  // kept tile without a hook); otherwise the scores are multiplied by it here and 1 is returned.
  // Element e of n-tile j of m-tile mt is (Layout::acc_row, Layout::acc_col).
  // With the score's row shift (kRowShift) the element code is score_core alone, and `shift`
  // receives each row's shift for this tile and the key slope, in the units of the scores left
  // here: the softmax adds both (the slope times the column's step from the lane's first
  // column: one FFMA an element for ALiBi). Without one, `shift` is left as it is.
  // Note: the key slope's FFMA is the softmax's, in its max loop, not a pass here: as a pass
  // here ptxas wrote its results to fresh registers and spilled 328 bytes (ALiBi, D=128, sm90).
  // Note: FOLD_SCALE is off where registers are tightest (kFoldScale; the sm90 kernel's
  // three-consumer blocks of 160 registers, where the fold's extra live value made ptxas spill
  // 68-92 bytes in the window, prefix and document kernels, block_m 192 with the overlap at D=64
  // and with P in shared memory at D=128), while the 240-register sm90 kernels and the SM80
  // kernel lost spills or stayed clean with it.
  // RAGGED_MASK_EVERY: a ragged partial tile evaluates the mask for every element (kMaskEvery);
  // otherwise where the bounds keep the element (kMaskIfPartial; see MaskTest).
  // MASK_ROWS_PAST_END: rows past q_len are masked, which makes every tile of a query tile that
  // reaches past q_len ragged (see below).
  template <bool FOLD_SCALE, bool RAGGED_MASK_EVERY = kPartialTilesOwnPath,
            bool MASK_ROWS_PAST_END = !DECODING>
  ATTNJIT_DEVICE float apply_scores(float (&acc_s)[kMTiles][kNTiles][4], int tile, int tile_class,
                                    int warp, int lane, const RowValues& row_values,
                                    RowShifts& shift) const {
    const int k0 = tile * BLOCK_N;
    // Note: in the kernels that serve decoding (DECODING: the sm80 kernel at head dims 64 and
    // up, both entries) only keys past kv_len make a tile ragged. Rows past q_len (a decoding
    // block's 32 rows for 1-8 queries, a prefill's last query tile) hold zeros (cp.async's zero
    // fill): finite scores in rows that are never stored, since each row's softmax and P V are
    // its own; a mask or score evaluated there reads tensors under the out-of-range rule like
    // any other index. Masking them made every tile of a decoding step take the per-element
    // path below (a keep predicate per score, and a mask's test behind a branch): on an H200,
    // causal at 4K keys in 13 slices took 22.7 us instead of 15.5. The sm90 kernel's rows past
    // q_len are TMA's zeros, or with packed sequences the next sequence's rows (finite or not:
    // never stored either); its kernels of 240-register consumers and of variants without a
    // mask leave them unmasked too (MASK_ROWS_PAST_END false; kMaskRowsPastEnd), so that a
    // prefill's last query tile, and each packed sequence's, takes the full and partial tiles'
    // paths. The rest (head dim 32, the masked sm90 kernels of fewer registers) keep masking
    // them: unmasking moved ptxas's allocation under their caps (16-28 bytes of spills in the
    // head-dim-32 document kernel, the short-rows kernel and 192-row sm90 kernels).
    const bool ragged =
        k0 + BLOCK_N > seq_kv_len() || (MASK_ROWS_PAST_END && q0 + BLOCK_M > seq_q_len());
    const bool partial = VARIANT::kHasMask && tile_class != kTileFull;
    const float scale = params.scale;
    // log2(e) * scale, or with a score expression its factored form's factor (the score is
    // factor * score_core(qk): codegen/factor_score.hpp).
    float scale_log2 = scale * kLog2e;
    if constexpr (VARIANT::kHasScore) scale_log2 = score_constants.factor;
    // Note: uniform across the block; a factor of 0 or below (allowed, if odd), infinite or NaN
    // is applied here, since the raw row max times it would not be the scaled row max.
    bool fold_scale = FOLD_SCALE && scale > 0.0f;
    if constexpr (VARIANT::kHasScore) {
      fold_scale = FOLD_SCALE && scale_log2 > 0.0f && scale_log2 < -neg_infinity();
    }
    const float unfolded_scale = fold_scale ? 1.0f : scale_log2;
    if (!VARIANT::kHasScore && !partial && !ragged) {
      if (fold_scale) return scale_log2;
      multiply_scores(acc_s, scale_log2);
    } else if (VARIANT::kHasScore && !partial && !ragged) {
      // Every element is kept: the score alone, without per-element keep predicates (which
      // made the compiler predicate the whole score and reload its constants per element).
      ColumnValues columns(*this, k0, lane);
      const HookRows hook_rows(*this, warp, lane);
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
        const typename VARIANT::Col(&col_values)[2] = columns.at(*this, k0, lane, j);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            acc_s[mt][j][e] = VARIANT::score_core(
                score_constants, block_values, row_values[mt][e >> 1], col_values[e & 1],
                params.args, acc_s[mt][j][e], b, h,
                hook_rows.at(*this, q0 + Layout::acc_row(warp, lane, mt, e), mt, e),
                k0 + Layout::acc_col(lane, j, e), hook_q_len(), seq_kv_len(), params.num_heads_q);
          }
        }
      }
      // Note: a pass of its own (block-uniform branch), so that a folded factor costs no
      // multiply by 1 per element.
      if (!fold_scale) multiply_scores(acc_s, scale_log2);
    } else if (kPartialTilesOwnPath && !ragged) {
      // A partial tile inside the bounds (a diagonal, a band's edge): the mask alone decides.
      // Note: a path of its own, so that the bounds' tests are not in its elements: with them
      // every element of a partial tile cost 11-16 instructions in the causal sm90 kernels
      // (predicates spilled to registers as bit masks, LOP3 and SEL per element; sm_90a, head
      // dim 64), three times a full tile's.
      mask_and_score<FOLD_SCALE, false, kMaskEvery, MASK_ROWS_PAST_END>(
          acc_s, k0, warp, lane, row_values, fold_scale, unfolded_scale, true);
    } else if (RAGGED_MASK_EVERY && partial) {
      // A ragged partial tile: the bounds and the mask, both for every element.
      mask_and_score<FOLD_SCALE, true, kMaskEvery, MASK_ROWS_PAST_END>(
          acc_s, k0, warp, lane, row_values, fold_scale, unfolded_scale, true);
    } else if (RAGGED_MASK_EVERY) {
      // A ragged full tile (or a variant without a mask): the bounds alone.
      mask_and_score<FOLD_SCALE, true, kMaskNone, MASK_ROWS_PAST_END>(
          acc_s, k0, warp, lane, row_values, fold_scale, unfolded_scale, false);
    } else {
      mask_and_score<FOLD_SCALE, true, kMaskIfPartial, MASK_ROWS_PAST_END>(
          acc_s, k0, warp, lane, row_values, fold_scale, unfolded_scale, partial);
    }
    // Note: after the elements, so that the shifts are not live through their loop.
    if constexpr (kRowShift) row_shifts(k0, warp, lane, row_values, unfolded_scale, shift);
    return fold_scale ? scale_log2 : 1.0f;
  }

  // How mask_and_score tests an element against the mask: kMaskEvery evaluates it for every
  // element and joins it to the bounds without a branch (the mask is pure and its tensor reads
  // are bounds-checked, so an element out of bounds may evaluate it too); kMaskNone never (a
  // full tile); kMaskIfPartial where `partial`, under the bounds' predicate (one copy of the
  // element loop for every ragged tile: head dim 32, see kPartialTilesOwnPath, and the sm90
  // kernels whose consumers have under 240 registers or head dim 256, where kMaskEvery made the
  // prefix-LM kernels spill 24-44 bytes: 192-row blocks, two blocks per SM, 128 x 80 at 256).
  // Note: kMaskEvery in ragged tiles since the thirty-fifth session. Before, every ragged tile
  // took kMaskIfPartial's form, and ptxas tested `partial` and the bounds in each element: a
  // BSSY / BSYNC branch region per element with two or three branches (64 regions in the
  // sliding window kernel at head dim 64, sm_90a), divergent where a warp straddles kv_len. A
  // decoding step's last key tile and every tile of a prefill's last query tile (q_len not a
  // multiple of the tile rows, on the sm90 kernel) are ragged.
  enum MaskTest { kMaskEvery, kMaskNone, kMaskIfPartial };

  // The scores of a partial or ragged tile: each element's keep predicate (with CHECK_BOUNDS the
  // bounds: keys past kv_len and, with MASK_ROWS_PAST_END, rows past q_len; and the mask as
  // MASK_TEST says), the score of a kept element times `unfolded_scale`, -inf for the others.
  template <bool FOLD_SCALE, bool CHECK_BOUNDS, MaskTest MASK_TEST, bool MASK_ROWS_PAST_END>
  ATTNJIT_DEVICE void mask_and_score(float (&acc_s)[kMTiles][kNTiles][4], int k0, int warp,
                                     int lane, const RowValues& row_values, bool fold_scale,
                                     float unfolded_scale, bool partial) const {
    const float scale = params.scale;
    // Note: without a score, a scale that is not folded is a pass of its own (block-uniform
    // branch), so that a folded one costs no multiply by 1 per element (a masked element's -inf
    // is selected after it).
    if constexpr (!VARIANT::kHasScore && FOLD_SCALE) {
      if (!fold_scale) multiply_scores(acc_s, unfolded_scale);
    }
    ColumnValues columns(*this, k0, lane);
    const HookRows hook_rows(*this, warp, lane);
#pragma unroll
    for (int j = 0; j < kNTiles; ++j) {
      const typename VARIANT::Col(&col_values)[2] = columns.at(*this, k0, lane, j);
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int q_idx = q0 + Layout::acc_row(warp, lane, mt, e);
          const int hook_q_idx = hook_rows.at(*this, q_idx, mt, e);
          const int kv_idx = k0 + Layout::acc_col(lane, j, e);
          const typename VARIANT::Row& row = row_values[mt][e >> 1];
          const typename VARIANT::Col& col = col_values[e & 1];
          bool keep = true;
          if constexpr (CHECK_BOUNDS) {
            keep = (!MASK_ROWS_PAST_END || q_idx < seq_q_len()) && kv_idx < seq_kv_len();
          }
          if constexpr (VARIANT::kHasMask && MASK_TEST == kMaskEvery) {
            keep = keep & VARIANT::mask(block_values, row, col, params.args, b, h, hook_q_idx,
                                        kv_idx, hook_q_len(), seq_kv_len(), params.num_heads_q);
          } else if constexpr (VARIANT::kHasMask && MASK_TEST == kMaskIfPartial) {
            if (partial && keep) {
              keep = VARIANT::mask(block_values, row, col, params.args, b, h, hook_q_idx,
                                   kv_idx, hook_q_len(), seq_kv_len(), params.num_heads_q);
            }
          }
          if constexpr (!VARIANT::kHasScore && FOLD_SCALE) {
            acc_s[mt][j][e] = keep ? acc_s[mt][j][e] : neg_infinity();
          } else if constexpr (!VARIANT::kHasScore) {
            // Note: written as (x * scale) * log2(e), as before the factored scores; as
            // x * (scale * log2(e)) it made ptxas spill 372 bytes in the sliding window
            // kernel with three consumer warpgroups at head dim 64.
            const float s = acc_s[mt][j][e] * scale;
            acc_s[mt][j][e] = keep ? s * kLog2e : neg_infinity();
          } else {
            // Note: the score only where kept; ptxas predicates a light one (soft-capping's
            // MUFU) and branches around a heavy one. Evaluated for every element (pure), a
            // score reading a tensor per element (bias[h, q_idx - kv_idx]) spilled 64 bytes
            // (causal, head dim 128, sm_90a).
            float s = acc_s[mt][j][e];
            if (keep) {
              s = VARIANT::score_core(score_constants, block_values, row, col, params.args, s, b,
                                      h, hook_q_idx, kv_idx, hook_q_len(), seq_kv_len(),
                                      params.num_heads_q);
            }
            acc_s[mt][j][e] = keep ? s * unfolded_scale : neg_infinity();
          }
        }
      }
    }
  }

  // Each held row's shift for the tile starting at key k0 (the variant's score_row_shift at the
  // lane's first column) and the key slope, times `unit` (1, or the factor when apply_scores
  // multiplies the scores by it).
  ATTNJIT_DEVICE void row_shifts(int k0, int warp, int lane, const RowValues& row_values,
                                 float unit, RowShifts& shift) const {
    if constexpr (kRowShift) {
      const int key_base = k0 + Layout::acc_col_lane(lane);
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        if constexpr (kKeySlope) {
          shift[mt].key_slope = unit * VARIANT::score_key_slope(score_constants);
        }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          shift[mt].shift[r] =
              unit * VARIANT::score_row_shift(
                         score_constants, block_values, row_values[mt][r], params.args, b, h,
                         hook_q(q0 + Layout::acc_row(warp, lane, mt, 2 * r)), key_base,
                         hook_q_len(), seq_kv_len(), params.num_heads_q);
        }
      }
    }
  }

  // Every score of the tile times `factor`.
  ATTNJIT_DEVICE static void multiply_scores(float (&acc_s)[kMTiles][kNTiles][4], float factor) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[mt][j][e] *= factor;
      }
    }
  }

  // The variant's hoisted values of the two columns c = 0, 1 that this thread holds in n-tile j
  // (Layout::acc_col with e = c) of the tile starting at key k0; shared by all its rows.
  ATTNJIT_DEVICE void load_col_values(int k0, int lane, int j,
                                      typename VARIANT::Col (&col_values)[2]) const {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      col_values[c] =
          VARIANT::col(block_values, params.args, b, h, k0 + Layout::acc_col(lane, j, c),
                       hook_q_len(), seq_kv_len(), params.num_heads_q);
    }
  }

  // A tile's column values as apply_scores walks its n-tiles. Up to 64 keys they are computed for
  // the whole tile up front, so that every tensor read is in flight at once (2 registers per n8
  // chunk and value: 16 at most). Wider tiles compute each n-tile's where it is used: held
  // across a 176-key tile of the sm90 kernel they cost 44 registers under P V and spilled it,
  // whereas per n-tile they spilled the 64-key head-dim-32 SM80 kernel under its 128-register
  // cap (ptxas, sm_90 / sm_90a).
  struct ColumnValues {
    static constexpr bool kWholeTile = BLOCK_N <= 64;
    typename VARIANT::Col values[kWholeTile ? kNTiles : 1][2];

    ATTNJIT_DEVICE ColumnValues(const AttentionForward& kernel, int k0, int lane) {
      if constexpr (kWholeTile) {
#pragma unroll
        for (int j = 0; j < kNTiles; ++j) kernel.load_col_values(k0, lane, j, values[j]);
      }
    }
    ATTNJIT_DEVICE const typename VARIANT::Col (&at(const AttentionForward& kernel, int k0,
                                                    int lane, int j))[2] {
      if constexpr (kWholeTile) {
        return values[j];
      } else {
        kernel.load_col_values(k0, lane, j, values[0]);
        return values[0];
      }
    }
  };

  ATTNJIT_DEVICE static const unsigned (&select_q(const QFragments& q_frag,
                                                  const unsigned (&a_smem)[kQInRegisters ? 1 : kMTiles][4],
                                                  int kk))[kMTiles][4] {
    if constexpr (kQInRegisters) {
      return q_frag[kk];
    } else {
      return a_smem;
    }
  }

  // Normalises O, stages the warp's rows in its own rows of the Q space, then writes them with
  // 16-byte stores (rows past q_len are skipped). Writes the LSE when requested. Under split-KV
  // the normalised rows and the LSE go to the slice's fp32 partials instead (store_partial).
  ATTNJIT_DEVICE void store_output(Accumulators& acc_o, const OnlineSoftmax (&softmax)[kMTiles],
                                   int warp, int lane) const {
    const int tig = lane & 3;
    const bool split_kv = DECODING && params.num_splits > 1;
    // The block's first row of lse: (b, h, 0) of [batch, num_heads_q, q_len], or with packed
    // queries (h, the sequence's first row) of [num_heads_q, q_total]; under split-KV its slot's
    // first row of the partials.
    float* lse_out = params.lse;
    long long lse_row0 = (static_cast<long long>(b) * params.num_heads_q + h) * params.q_len;
    if constexpr (kSequenceTables) {
      if (params.sequences.q_starts != nullptr) {
        lse_row0 = static_cast<long long>(h) * params.sequences.q_total + seq_q_row0();
      }
    }
    if (split_kv) {
      lse_out = params.lse_partial;
      lse_row0 = partial_row0();
    }
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float sum = quad_sum(softmax[mt].row_sum[r]);
        // Note: a row with a finite max has sum >= 1 (its max element contributes exp2(0));
        // sum == 0 only for a fully masked row, which writes zeros and lse = -inf. A NaN or
        // +inf score makes the sum NaN (fmaxf drops a NaN from the max, exp2 does not), and
        // that NaN must reach the row's output and lse, so the test is sum == 0, not sum > 0.
        const bool masked_row = sum == 0.0f;
        const float inv = masked_row ? 0.0f : 1.0f / sum;
#pragma unroll
        for (int j = 0; j < kDTiles; ++j) {
          acc_o[mt][j][2 * r] *= inv;
          acc_o[mt][j][2 * r + 1] *= inv;
        }
        const int q_idx = q0 + Layout::acc_row(warp, lane, mt, 2 * r);
        if (lse_out != nullptr && tig == 0 && q_idx < stored_rows_end()) {
          const float lse =
              masked_row ? neg_infinity() : (softmax[mt].row_max[r] + fast_log2(sum)) * kLn2;
          store_global_f32(lse_out + lse_row0 + call_row(q_idx), lse);
        }
      }
    }
    if (split_kv) {
      store_partial(acc_o, warp, lane, lse_row0);
      return;
    }

    // Note: warp w only ever touches its own kWarpRows rows of the Q space (its own Q rows), so
    // a warp-level barrier orders the staging stores before the reads.
    unsigned char* smem_warp = q_tile + Layout::q_warp_offset(warp);
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int o_lane = Layout::o_lane(lane, r);
#pragma unroll
        for (int j = 0; j < kDTiles; ++j) {
          store_shared_32(smem_warp + Layout::o_stage(o_lane, mt, j),
                          ElemTraits<ELEM>::pack2(acc_o[mt][j][2 * r], acc_o[mt][j][2 * r + 1]));
        }
      }
    }
    __syncwarp();

    unsigned short* o_base = static_cast<unsigned short*>(params.o) + b * params.o_stride[0] +
                             h * params.o_stride[1] +
                             static_cast<long long>(seq_q_row0()) * params.o_stride[2];
#pragma unroll
    for (int i = 0; i < Layout::kOutputPasses; ++i) {
      const int chunk = Layout::o_read_chunk(lane, i);
      const int q_idx = q0 + Layout::warp_row0(warp) + Layout::o_read_row(lane, i);
      if (q_idx < stored_rows_end()) {
        store_global_16(o_base + output_row_offset(q_idx) + chunk * 8,
                        load_shared_16(smem_warp + Layout::o_read(lane, i)));
      }
    }
  }

  // Split-KV with a mask: the block's slice of the key tiles from its query tile's first kept one
  // on (kept_span_slice), in place of assign_work's slice of all of them. Every slice's block
  // walks to the same first tile (classification is deterministic), so the slices still cover
  // each kept tile once. The walk costs a few classification steps (empty stretches are skipped
  // 32 windows at a time). Its last window, the one holding the first kept tile, is the caller's
  // `window` for the block's own walk: a slice that begins inside it (every slice of a kept span
  // shorter than the window: a decoding step's window of keys, or a short cache) starts without
  // a classification step of its own, which sat between Q's copies and the first K/V copy. The
  // window's bits past the slice's end are tiles at or past num_kv_tiles when next_tile finds
  // them, which every caller takes for none. Block-uniform (the walk's barriers).
  ATTNJIT_DEVICE void slice_kept_span(TileWindow& window) {
    kv_tile_begin = 0;
    num_kv_tiles = (seq_kv_len() + BLOCK_N - 1) / BLOCK_N;
    int first_class = kTileEmpty;
    const int first = next_tile(0, first_class, window);
    int split = 0, slices = 1;
    slice_of_block(split, slices);
    const KeySlice slice = kept_span_slice(first, num_kv_tiles, split, slices);
    kv_tile_begin = slice.begin;
    num_kv_tiles = slice.end;
  }

  // The block's slot under split-KV (FwdParams::o_partial), recomputed from the block index so
  // that it holds no register through the main loop (the head-dim-32 kernel's 128 are all taken).
  // Note: over assign_work's query tiles of block_rows(): a packed sm90 block's whole queries
  // may be fewer rows than BLOCK_M, and so its tiles more (511 rows of a group of 7: 5 of 126).
  ATTNJIT_DEVICE long long slot_of_block() const {
    const long long linear =
        static_cast<long long>(blockIdx.y) * gridDim.x + static_cast<long long>(blockIdx.x);
    const int rows = block_rows();
    return linear / ((params.q_len + rows - 1) / rows);
  }

  // The first row of the block's (batch, head) in the split-KV partials (FwdParams::o_partial):
  // its slot's, or with packed queries its slice's packed rows of head h.
  ATTNJIT_DEVICE long long partial_row0() const {
    if constexpr (kSequenceTables) {
      if (params.sequences.q_starts != nullptr) {
        const long long split = slot_of_block() % params.num_splits;
        return (split * params.num_heads_q + h) * params.sequences.q_total + seq_q_row0();
      }
    }
    return slot_of_block() * params.q_len;
  }

  // The block's slice of its (batch, head)'s keys and their number of slices (assign_work's):
  // uniform from the slot, balanced from balanced_slice's words in shared memory.
  ATTNJIT_DEVICE void slice_of_block(int& split, int& slices) const {
    if constexpr (kBalancedSplits) {
      if (params.split_slots != nullptr) {
        const unsigned char* words = balanced_split_words();
        split = static_cast<int>(load_shared_u32(words + 4));
        slices = static_cast<int>(load_shared_u32(words + 8));
        return;
      }
    }
    split = static_cast<int>(slot_of_block() % params.num_splits);
    slices = params.num_splits;
  }

  // Split-KV: the warp's normalised rows as fp32 straight from the accumulators, row q_idx at
  // o_partial + (first_row + call_row(q_idx)) * HEAD_DIM. A decode call's output is a few rows,
  // so the 8-byte-per-lane stores (32 contiguous bytes per quad) are not worth staging.
  ATTNJIT_DEVICE void store_partial(const Accumulators& acc_o, int warp, int lane,
                                    long long first_row) const {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int q_idx = q0 + Layout::acc_row(warp, lane, mt, 2 * r);
        if (q_idx >= stored_rows_end()) continue;
        float* out = params.o_partial + (first_row + call_row(q_idx)) * HEAD_DIM;
#pragma unroll
        for (int j = 0; j < kDTiles; ++j) {
          const int col = Layout::acc_col(lane, j, 2 * r);
          store_global_f32(out + col, acc_o[mt][j][2 * r]);
          store_global_f32(out + col + 1, acc_o[mt][j][2 * r + 1]);
        }
      }
    }
  }
};

// The kernel body; the generated entry point calls it with its only argument.
template <typename VARIANT, typename ELEM, int HEAD_DIM, int BLOCK_M, int BLOCK_N, int NUM_WARPS,
          int NUM_STAGES>
ATTNJIT_DEVICE void attention_forward(const FwdParams& params) {
  AttentionForward<VARIANT, ELEM, HEAD_DIM, BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES,
                   has_decoding_features(HEAD_DIM)>
      kernel(params);
  kernel.run();
}

// The decoding entry's body (kDecodeBlockM rows, kDecodeWarps warps; fwd_config.cuh).
template <typename VARIANT, typename ELEM, int HEAD_DIM, int BLOCK_N, int NUM_STAGES>
ATTNJIT_DEVICE void attention_forward_decode(const FwdParams& params) {
  static_assert(has_decoding_features(HEAD_DIM), "the decoding entry needs the decoding features");
  AttentionForward<VARIANT, ELEM, HEAD_DIM, kDecodeBlockM, BLOCK_N, kDecodeWarps, NUM_STAGES,
                   /*DECODING=*/true, /*SKIP_IDLE_WARPS=*/true>
      kernel(params);
  kernel.run();
}

#endif  // ATTNJIT_KERNEL_CODE

}  // namespace attnjit
