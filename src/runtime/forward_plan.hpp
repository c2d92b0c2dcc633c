// What a forward call launches, as pure host data: the kernel's parameter block, the grid, and
// the tensor-summary launches the mask needs. The CUDA backend launches it through the driver;
// the SIMT emulator of tests/simt launches the very same plan on the host, so the tests exercise
// the parameters the GPU receives.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attnjit/fwd_config.cuh"
#include "attnjit/fwd_params.cuh"
#include "attnjit/sm90_fwd_config.cuh"
#include "attnjit/split_combine.cuh"
#include "codegen/variant_source.hpp"
#include "common/attention_problem.hpp"
#include "expr/block_analysis.hpp"

namespace attnjit {

constexpr int kSummaryThreads = 256;  // threads per block of the summary kernel
static_assert(kSummaryThreads % 32 == 0, "the summary kernel gives each summary block a warp");

struct LaunchGrid {
  unsigned grid_x = 1;
  unsigned grid_y = 1;
  unsigned threads = 1;
  unsigned smem_bytes = 0;
};

// A plain kernel: x = query tiles, y = batch * num_heads_q * num_splits (the kernel re-maps the
// linear block index itself). A persistent one (config.persistent): x = min(work items,
// multiprocessors), one block per SM walking the query tiles of every (batch, head), y = 1.
LaunchGrid forward_grid(const AttentionShape& shape, const codegen::KernelConfig& config,
                        int multiprocessors, int num_splits = 1);

// ---- Split-KV (decoding). A call with too few query tiles to fill the GPU (one query per
// sequence, a handful of heads) but many key tiles leaves most SMs idle while each block walks
// every key: such calls split the keys into slices, one block each, and merge the slices'
// partial outputs with a second kernel (FwdParams::num_splits, split_combine.cuh).
constexpr int kMaxSplits = 128;
// A slice keeps at least kMinSplitTiles key tiles (fwd_config.cuh), kSm90MinSplitTiles on the sm90
// split kernel (sm90_fwd_config.cuh).
// The slices aim at this many blocks per SM, not at every resident slot: on the H200 above, 32
// slices (256 blocks, two an SM) beat 37 (296 blocks, two or three an SM) at 16K keys by 1.6 us,
// since an SM that holds three blocks of one step finishes last.
constexpr int kSplitBlocksPerSm = 2;

// ATTNJIT_SPLIT_KV: unset, empty or "auto": the heuristic below; "off" or 1: never split; N > 1:
// N slices whenever the kernel can split (clamped to the key tiles). Error(invalid_argument)
// for anything else.
std::optional<int> split_kv_from_environment();

// Whether a kernel of `config` can split a call's keys: the sm80 family's (not persistent) with
// has_decoding_features(head_dim), and the sm90 family's split kernel (KernelConfig::split_kv).
bool splits_keys(const codegen::KernelConfig& config, int head_dim);

// How many slices the call's keys get on a GPU of `multiprocessors` SMs: 1 unless the kernel
// splits_keys and the unsplit grid fills under 80% of one wave of resident blocks. Then as many
// slices as give every SM kSplitBlocksPerSm of the call's blocks (or its residency, if lower),
// within kMaxSplits, kMinSplitTiles tiles per slice (kSm90MinSplitTiles on the sm90 kernel) and
// the grid's y limit. `forced` (split_kv_from_environment) replaces the heuristic.
int choose_num_splits(const AttentionShape& shape, const codegen::KernelConfig& config,
                      int multiprocessors, std::optional<int> forced = std::nullopt);

// ---- Packed GQA (decoding). A few queries per sequence with num_heads_q / num_heads_kv = g > 1:
// the g query heads of a group become rows of one head (g rows a query), so one block reads each
// key tile once for the whole group instead of once per query head (FwdParams::pack_gqa). A
// speculative step of q queries (2-8 draft tokens) with groups of 4-8 is such a call: unpacked,
// each of the g heads' blocks reads the group's keys and values again, and fills q of its 32
// rows.

// ATTNJIT_PACK_GQA: unset, empty or "auto": pack where gqa_pack_group allows; "off": never (for
// measurements). Error(invalid_argument) for anything else.
bool pack_gqa_from_environment();

// g when the call packs on a kernel of `config`, 1 otherwise: g > 1, neither expression using h
// or num_heads (`hooks_use_heads`), which would differ per row, and
// - the sm80 family with has_decoding_features(head_dim): either one query or, where the decoding
//   entry runs the step (`decode_entry`, config.decode_block_n) and would run it unpacked (q_len
//   <= kDecodeBlockM), g <= kDecodeBlockM: the group's g * q_len rows in ceil(g * q_len / 32)
//   decoding blocks instead of g (the forward entry maps a row to its head, not its query);
// - the sm90 split kernel (config.split_kv): several queries, fewer than block_m (a longer
//   prefill's tiles are full anyway), whose g * q_len rows are more than
//   kSm90MinPackedRows, fewer blocks packed than unpacked (ceil(q_len / (block_m / g)) < g: a
//   speculative step of 16-127 draft tokens, a short chunk; a
//   block's rows are block_m / g whole queries, its Q box: sm90_tensor_maps), g up to 32 and the
//   rows below kPackedRowLimit (packed_rows.cuh).
int gqa_pack_group(const AttentionShape& shape, const codegen::KernelConfig& config,
                   bool hooks_use_heads, bool decode_entry = true);

// A packed step of at most this many rows stays on the sm80 decoding entry (two of its 32-row
// blocks): its keys are read at most twice there, and the sm90 split kernel's 128-row tile would
// be half empty.
constexpr int kSm90MinPackedRows = 2 * kDecodeBlockM;

// The packed launch's view of the call: num_heads_kv heads of group * q_len rows, row r query
// head r % group's query r / group (so the call's row (b, h, i) is row (h % group) + group * i of
// head h / group); the view's row strides of q and out are the query heads', and with one query
// the rows are exactly the heads. With several, attach_packing gives the kernel the queries'
// strides, and the kernel stores lse and the split-KV partials in the call's own row order.
void pack_gqa(int group, AttentionShape& shape, AttentionBuffers& buffers);

struct DecodingPlan;
// The packing fields of `params` for a call of `shape` and `buffers` (the call's own, not the
// packed view) launched as `plan` says (its group: 1, not packed).
void attach_packing(const DecodingPlan& plan, const AttentionShape& shape,
                    const AttentionBuffers& buffers, FwdParams& params);

// A split call's slices and where their partials live in the call's scratch (after the tensor
// summaries, at `offset` bytes): slots * q_len LSEs, then slots * q_len * head_dim outputs
// (slots = batch * num_heads_q * num_splits, FwdParams::o_partial), then for a balanced split
// each (batch, head)'s first slot and slice count (FwdParams::split_slots). num_splits == 1:
// nothing to place or merge.
struct SplitPlan {
  int num_splits = 1;
  int split_tiles = 0;  // key tiles per slice (the last may have fewer); 0 when balanced
  // The slices are sized to each sequence's own key count on the device (FwdParams::split_slots)
  // and num_splits is the slots a sequence has on average.
  bool balanced = false;
  std::size_t offset = 0;        // bytes from the scratch's start: the LSEs
  std::size_t o_offset = 0;      // the outputs
  std::size_t slots_offset = 0;  // a balanced split's slot table
  std::size_t bytes = 0;         // the partials' bytes (and the table's)
  LaunchGrid combine;            // the merge launch: one block per row
};

// `num_splits` from choose_num_splits, re-balanced so that no slice is empty; `offset` is where
// the partials may start in the scratch (rounded up to 256 bytes). `balanced` (balance_split's
// answer): the slices are sized on the device, and num_splits is kept as it is. `packed_rows`:
// the packed query rows (SequenceTables::q_total) of a call with packed queries, whose partials
// are those rows' (SplitCombineParams::q_starts); 0: batch * q_len rows a head.
SplitPlan plan_split(const AttentionShape& shape, const codegen::KernelConfig& config,
                     int num_splits, std::size_t offset, bool balanced = false,
                     int packed_rows = 0);

// The slices of a call with packed queries (`tables`.q_starts) on the sm90 split kernel
// (KernelConfig::split_kv; 1 on any other kernel): choose_num_splits for the query tiles its
// sequences have together (about ceil(q_total / block_m) a head: the grid's blocks past a short
// sequence's queries end at once), within the grid's y limit over its `shape`.batch sequences.
// A chunked prefill's few sequences of a few hundred queries over long caches, a few heads per
// GPU, leave most SMs idle unsplit.
int choose_packed_query_splits(const AttentionShape& shape, const SequenceTables& tables,
                               const codegen::KernelConfig& config, int multiprocessors,
                               std::optional<int> forced = std::nullopt);

// ATTNJIT_BALANCE_SPLIT: unset, empty or "auto": balance where balance_split allows; "off":
// never (uniform slices, for measurements). Error(invalid_argument) for anything else.
bool balance_split_from_environment();

// Whether a split call over `buffers` balances its slices over its sequences' key counts
// (FwdParams::split_slots): with per-sequence key counts (kv_seq_lens, kv_seq_starts), on a
// kernel `config` that reads sequence tables (an sm80-family module's, or the sm90 split
// kernel's), when the device's sums (batch * (key tiles + 1), tiles of the launched entry's
// `block_n` keys) fit an int, and when a sequence's kept keys grow with its count: so for a
// variant without a mask, or whose mask keeps some key of the first key tile for the call's
// queries at the longest count (a causal mask over a cache: its kept span is the whole
// sequence), asked of the host's block analysis with the call's `args`. Not for a mask that keeps
// none there (a sliding window keeps as many keys in a short sequence as in a long one, and
// slices sized by the counts would leave the short ones' few blocks to end the step), nor for one
// that reads tensors (in device memory, which the host does not read). `shape` is the call's own
// (the mask's q_len), not a packed view.
bool balance_split(const AttentionShape& shape, const AttentionBuffers& buffers,
                   const codegen::KernelConfig& config, int block_n, const expr::Expression& mask,
                   const VariantArgs& args);

// "4 slices of 5 key tiles", or for a balanced split "4 slices a sequence on average, sized to
// each sequence's key count".
std::string describe_split(const SplitPlan& plan);

// Points the forward parameters at the slices' partials in `scratch` (device memory of at least
// plan.offset + plan.bytes bytes) and returns the merge launch's parameters for `buffers`.
// `shape` and `buffers` are the call's own, not a packed view: the partials keep the call's row
// order (FwdParams::pack_gqa).
SplitCombineParams attach_split(const SplitPlan& plan, const AttentionShape& shape,
                                const AttentionBuffers& buffers, void* scratch,
                                FwdParams& params);

// ---- The decoding entry (codegen::kDecodeEntry): a launch of at most kDecodeBlockM query rows
// (after packing), or a packed step of several queries, runs the forward kernel in
// kDecodeBlockM-row blocks, several per SM, whose warps without a real row skip the math
// (fwd_config.cuh).

// ATTNJIT_DECODE_ENTRY: unset, empty or "auto": use it where it applies; "off": never (for
// measurements). Error(invalid_argument) for anything else.
bool decode_entry_from_environment();

// ATTNJIT_SHORT_ROWS: unset, empty or "auto": calls with short rows run on their variant's
// short-rows kernel where it has one (runtime/short_rows.hpp); "off": never (for measurements).
// Error(invalid_argument) for anything else.
bool short_rows_from_environment();

// ATTNJIT_PDL: unset, empty or "auto": a call's launches after its first overlap the one before
// where the GPU allows it (overlap_launches); "off": never (for measurements).
// Error(invalid_argument) for anything else.
bool overlap_launches_from_environment();

// ATTNJIT_CARVEOUT: unset, empty or "auto": every kernel asks for the same (the largest)
// shared-memory carveout (cuda_context.hpp, use_carveout); "off": only kernels of several blocks
// per SM do, as before (for measurements). Error(invalid_argument) for anything else.
bool uniform_carveout_from_environment();

// What the environment may change about how a call launches (for measurements).
struct LaunchChoices {
  bool pack_gqa = true;         // ATTNJIT_PACK_GQA
  std::optional<int> split_kv;  // ATTNJIT_SPLIT_KV (nullopt: the heuristic)
  bool decode_entry = true;     // ATTNJIT_DECODE_ENTRY
  bool short_rows = true;       // ATTNJIT_SHORT_ROWS
  bool overlap_launches = true;  // ATTNJIT_PDL
  bool uniform_carveout = true;  // ATTNJIT_CARVEOUT (cuda_context.hpp, use_carveout)
  bool balance_split = true;     // ATTNJIT_BALANCE_SPLIT
};
LaunchChoices launch_choices_from_environment();

// Whether a call's second and later launches (the forward kernel after the tensor summaries, a
// summary after another, the split-KV merge after the forward kernel) are programmatic dependent
// launches, which may start while the kernel before still runs (grid_dependency.cuh): on compute
// capability 9.0 and later (sm_80 and sm_86 have no griddepcontrol), unless `choices` turn it
// off, and not while the stream is being captured into a graph (not yet verified on hardware
// there). The call's first launch never is: it follows the caller's work, which it reads.
bool overlap_launches(int sm, const LaunchChoices& choices, bool capturing);

// How a call runs on the kernel of `config` on a GPU of `multiprocessors` SMs: its packed GQA
// group, whether the decoding entry runs it, with which tiles, and in how many slices.
struct DecodingPlan {
  int group = 1;                 // gqa_pack_group's (1: not packed)
  bool decode_entry = false;
  codegen::KernelConfig config;  // the launched entry's: decode_config(config) or config
  // A packed sm90 launch's rows per block, group * (block_m / group): whole queries (also
  // config.block_m, the launch's tiles; FwdParams::pack_block_rows). 0 otherwise.
  int block_rows = 0;
  int num_splits = 1;            // the slices launched (choose_num_splits, then plan_split)
};
DecodingPlan plan_decoding(const AttentionShape& shape, const codegen::KernelConfig& config,
                           bool hooks_use_heads, int multiprocessors,
                           const LaunchChoices& choices);

// The parameter block, with the args' tensor summaries still empty (see SummaryLaunch).
FwdParams make_forward_params(const AttentionShape& shape, const AttentionBuffers& buffers,
                              const VariantArgs& args);

// The sm90 kernel's tensor maps, as the arguments of cuTensorMapEncodeTiled (the encoding itself
// is the driver's: runtime/tensor_map_encoding.hpp). One per input: Q, K, V.
// A packed GQA launch's Q map has rank 5 (sm90_tensor_maps).
struct TensorMapRequest {
  const void* address = nullptr;
  DType dtype = DType::bf16;
  std::uint32_t rank = 4;
  std::uint64_t dims[5] = {};     // head_dim, len, heads, batch (innermost first)
  std::uint64_t strides[4] = {};  // bytes between rows, heads, batches
  std::uint32_t box[5] = {};      // 64 columns, rows, 1, 1
};

// Why TMA cannot load this call's Q, K or V, or empty when it can: TMA needs 16-byte aligned
// bases and strides that are positive multiples of 16 bytes below 2^40 (a dimension of extent 1
// is exempt: its stride is never used), and a paged call pages of a multiple of
// kSm90MinPagedBoxRows rows.
std::string tma_limitation(const AttentionShape& shape, const AttentionBuffers& buffers);

// Q, K, V maps for the sm90 kernel of `config`; the call must have no tma_limitation. A paged
// call's K and V maps are of its pools, in boxes of sm90_paged_box_rows rows (sm90_fwd_params.cuh).
// `shape` and `buffers` are the call's own; a call launched packed (`group` > 1, gqa_pack_group)
// has a 5-d Q map, {head_dim, group, num_heads_kv, q_len, batch} in boxes {64, group, 1, block_m
// / group, 1}: a box is block_m / group whole queries, group * (block_m / group) packed rows,
// query-major (the split kernel's load_packed_q).
std::array<TensorMapRequest, 3> sm90_tensor_maps(const AttentionShape& shape,
                                                 const AttentionBuffers& buffers,
                                                 const codegen::KernelConfig& config,
                                                 int group = 1);
// A paged call's K and V tail maps (Sm90FwdParams::k_tail_map, v_tail_map): its K and V maps
// (`maps`, sm90_tensor_maps') with pages cut after the row of key kv_len - 1.
std::array<TensorMapRequest, 2> sm90_paged_tail_maps(const std::array<TensorMapRequest, 3>& maps,
                                                     const AttentionShape& shape,
                                                     const AttentionBuffers& buffers);

// One summary kernel launch: min/max of args.tensors[tensor] over blocks of `granularity`
// indices (the forward kernel's tile size along `axis`), written at `offset` ints into a
// scratch buffer of SummaryPlan::total_ints: num_blocks minima, then num_blocks maxima.
struct SummaryLaunch {
  expr::SummaryRequest request;
  int len = 0;  // elements of the tensor
  int index_len = 0;
  int granularity = 0;
  int num_blocks = 0;
  std::size_t offset = 0;
  LaunchGrid grid;
};

struct SummaryPlan {
  std::vector<SummaryLaunch> launches;
  std::size_t total_ints = 0;
};

SummaryPlan plan_summaries(const std::vector<expr::SummaryRequest>& requests,
                           const AttentionShape& shape, const codegen::KernelConfig& config,
                           const VariantArgs& args);

// Points the summary of `launch`'s tensor in `args` at its results inside `scratch` (an int
// array of plan.total_ints, in the memory the kernels will read).
void attach_summary(const SummaryLaunch& launch, const int* scratch, VariantArgs& args);

// Everything a forward call launches, in order: the summary kernels, the forward entry
// (`entry` of the module, with `params`' shape and buffers as `shape` / `buffers`: the call's
// packed view), then the split-KV merge when split.num_splits > 1. `scratch_bytes` of device
// scratch hold the summaries and the partials.
struct ForwardLaunch {
  DecodingPlan decoding;
  AttentionShape shape;
  AttentionBuffers buffers;
  const char* entry = codegen::kForwardEntry;
  SummaryPlan summaries;
  SplitPlan split;
  LaunchGrid grid;
  std::size_t scratch_bytes = 0;
};
// `mask`: the variant's (whether a split is balanced: balance_split).
ForwardLaunch plan_forward_launch(const AttentionShape& shape, const AttentionBuffers& buffers,
                                  const codegen::KernelConfig& config, bool hooks_use_heads,
                                  const expr::Expression& mask,
                                  const std::vector<expr::SummaryRequest>& summary_requests,
                                  const VariantArgs& args, int multiprocessors,
                                  const LaunchChoices& choices);

}  // namespace attnjit
