#include "runtime/forward_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

#include "attnjit/sm90_fwd_params.cuh"
#include "common/error.hpp"
#include "common/int_math.hpp"

namespace attnjit {
namespace {

constexpr std::uint64_t kTmaAlignment = 16;
constexpr std::uint64_t kTmaStrideLimit = std::uint64_t{1} << 40;
constexpr std::uint32_t kTmaBoxColumns = 64;  // one 128-byte swizzle row of 16-bit elements

// The view's byte strides of rows, heads and batches, with each extent.
struct ByteStride {
  const char* name;
  std::int64_t bytes;
  int extent;
};

// `pool`: the view is a paged call's keys or values, pages in the batch's place.
std::array<ByteStride, 3> byte_strides(const TensorView& view, std::size_t element, bool pool) {
  const auto bytes = [&](std::int64_t elements) {
    return elements * static_cast<std::int64_t>(element);
  };
  return {{{"row", bytes(view.strides.row), view.len},
           {"head", bytes(view.strides.head), view.heads},
           {pool ? "page" : "batch", bytes(view.strides.batch), view.batch}}};
}

// An auto|off switch: true when `name` is unset, empty or "auto", false for "off";
// Error(invalid_argument) for anything else.
bool auto_or_off(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0' || std::string_view(value) == "auto") return true;
  if (std::string_view(value) == "off") return false;
  throw_error(Status::invalid_argument, "{} must be auto or off; got '{}'", name, value);
}

}  // namespace

LaunchGrid forward_grid(const AttentionShape& shape, const codegen::KernelConfig& config,
                        int multiprocessors, int num_splits) {
  LaunchGrid grid;
  grid.grid_x = static_cast<unsigned>(ceil_div(shape.q_len, config.block_m));
  grid.grid_y = static_cast<unsigned>(shape.batch * shape.num_heads_q * num_splits);
  if (config.persistent) {
    // Note: one block per SM, because the kernel needs over half an SM's shared memory and all
    // of its registers (setmaxnreg); any grid size computes the same result.
    const long long items = static_cast<long long>(grid.grid_x) * grid.grid_y;
    grid.grid_x = static_cast<unsigned>(std::min<long long>(items, std::max(multiprocessors, 1)));
    grid.grid_y = 1;
  }
  grid.threads = static_cast<unsigned>(config.num_warps * 32);
  grid.smem_bytes = static_cast<unsigned>(config.smem_bytes);
  return grid;
}

std::optional<int> split_kv_from_environment() {
  const char* value = std::getenv("ATTNJIT_SPLIT_KV");
  if (value == nullptr || *value == '\0' || std::string_view(value) == "auto") return std::nullopt;
  if (std::string_view(value) == "off") return 1;
  int count = 0;
  const char* end = value + std::strlen(value);
  const auto [at, error] = std::from_chars(value, end, count);
  if (error != std::errc() || at != end || count < 1) {
    throw_error(Status::invalid_argument,
                "ATTNJIT_SPLIT_KV must be auto, off or a slice count of at least 1; got '{}'",
                value);
  }
  return count;
}

bool splits_keys(const codegen::KernelConfig& config, int head_dim) {
  if (config.family == codegen::KernelFamily::sm90) return config.split_kv;
  return !config.persistent && has_decoding_features(head_dim);
}

int choose_num_splits(const AttentionShape& shape, const codegen::KernelConfig& config,
                      int multiprocessors, std::optional<int> forced) {
  if (!splits_keys(config, shape.head_dim)) return 1;
  const long long blocks = static_cast<long long>(ceil_div(shape.q_len, config.block_m)) *
                           shape.batch * shape.num_heads_q;
  const int kv_tiles = ceil_div(shape.kv_len, config.block_n);
  // Note: the grid's y extent is batch * num_heads_q * num_splits, at most 65535.
  const long long by_grid = 65535 / std::max<long long>(1, shape.batch * shape.num_heads_q);
  const int limit = static_cast<int>(std::min<long long>({kMaxSplits, kv_tiles, by_grid}));
  if (forced) return std::clamp(*forced, 1, std::max(limit, 1));
  const long long sms = std::max(multiprocessors, 1);
  const long long slots = sms * std::max(config.blocks_per_sm, 1);
  if (5 * blocks >= 4 * slots) return 1;  // at least 80% of one wave already
  const int min_tiles =
      config.family == codegen::KernelFamily::sm90 ? kSm90MinSplitTiles : kMinSplitTiles;
  const int most = std::min(limit, kv_tiles / min_tiles);
  if (most < 2) return 1;
  // As many slices as give each SM kSplitBlocksPerSm blocks (fewer where fewer are resident).
  const long long target = sms * std::min(std::max(config.blocks_per_sm, 1), kSplitBlocksPerSm);
  return static_cast<int>(std::clamp<long long>(target / blocks, 1, most));
}

bool decode_entry_from_environment() { return auto_or_off("ATTNJIT_DECODE_ENTRY"); }

bool short_rows_from_environment() { return auto_or_off("ATTNJIT_SHORT_ROWS"); }

bool overlap_launches_from_environment() { return auto_or_off("ATTNJIT_PDL"); }

bool uniform_carveout_from_environment() { return auto_or_off("ATTNJIT_CARVEOUT"); }

bool balance_split_from_environment() { return auto_or_off("ATTNJIT_BALANCE_SPLIT"); }

LaunchChoices launch_choices_from_environment() {
  return {pack_gqa_from_environment(),         split_kv_from_environment(),
          decode_entry_from_environment(),     short_rows_from_environment(),
          overlap_launches_from_environment(), uniform_carveout_from_environment(),
          balance_split_from_environment()};
}

bool overlap_launches(int sm, const LaunchChoices& choices, bool capturing) {
  return sm >= 90 && choices.overlap_launches && !capturing;
}

DecodingPlan plan_decoding(const AttentionShape& shape, const codegen::KernelConfig& config,
                           bool hooks_use_heads, int multiprocessors,
                           const LaunchChoices& choices) {
  DecodingPlan plan;
  plan.group =
      choices.pack_gqa ? gqa_pack_group(shape, config, hooks_use_heads, choices.decode_entry) : 1;
  AttentionShape launch_shape = shape;
  AttentionBuffers no_buffers;  // Note: only the shape of the packed view is needed here
  pack_gqa(plan.group, launch_shape, no_buffers);
  // Note: a packed step of several queries runs on the decoding entry whatever its rows (its
  // rows map to queries only there: gqa_pack_group), in as many 32-row blocks as it needs.
  const bool packed_queries = plan.group > 1 && shape.q_len > 1;
  plan.decode_entry = choices.decode_entry && config.family == codegen::KernelFamily::sm80 &&
                      config.decode_block_n > 0 &&
                      (launch_shape.q_len <= kDecodeBlockM || packed_queries);
  plan.config = plan.decode_entry ? codegen::decode_config(config) : config;
  if (plan.group > 1 && config.family == codegen::KernelFamily::sm90) {
    // Note: a packed sm90 block takes whole queries (its Q box: sm90_tensor_maps), and the
    // launch's tiles (grid, slices, summaries) are of those rows.
    plan.block_rows = plan.group * (config.block_m / plan.group);
    plan.config.block_m = plan.block_rows;
  }
  // Note: the count plan_split launches (re-balanced so that no slice is empty).
  plan.num_splits =
      plan_split(launch_shape, plan.config,
                 choose_num_splits(launch_shape, plan.config, multiprocessors, choices.split_kv),
                 0)
          .num_splits;
  return plan;
}

bool pack_gqa_from_environment() { return auto_or_off("ATTNJIT_PACK_GQA"); }

namespace {

// gqa_pack_group on the sm90 split kernel.
int sm90_pack_group(const AttentionShape& shape, const codegen::KernelConfig& config, int group) {
  // Note: a few queries, fewer than a block's rows: a longer prefill's tiles are full anyway.
  if (!config.split_kv || shape.q_len < 2 || shape.q_len >= config.block_m ||
      group > kDecodeBlockM) {
    return 1;
  }
  // Unpacked, each query head takes one block of q_len rows; packed, a block's rows are whole
  // queries.
  const long long rows = static_cast<long long>(group) * shape.q_len;
  const int packed_blocks = ceil_div(shape.q_len, config.block_m / group);
  const bool packs = rows > kSm90MinPackedRows && rows <= kPackedRowLimit && packed_blocks < group;
  return packs ? group : 1;
}

}  // namespace

int gqa_pack_group(const AttentionShape& shape, const codegen::KernelConfig& config,
                   bool hooks_use_heads, bool decode_entry) {
  if (hooks_use_heads || shape.q_len < 1 || shape.num_heads_kv <= 0 ||
      shape.num_heads_q <= shape.num_heads_kv) {
    return 1;
  }
  const int group = shape.num_heads_q / shape.num_heads_kv;
  if (config.family == codegen::KernelFamily::sm90) return sm90_pack_group(shape, config, group);
  if (!has_decoding_features(shape.head_dim)) return 1;
  if (shape.q_len == 1) return group;
  // Note: a step the decoding entry would run unpacked (q_len <= kDecodeBlockM: one block per
  // query head) takes ceil(group * q_len / kDecodeBlockM) <= group blocks per key/value head
  // packed, never more. packed_row_query is exact for groups up to kDecodeBlockM and rows below
  // kPackedRowLimit (packed_rows.cuh), which such steps stay within.
  const bool packs = decode_entry && config.decode_block_n > 0 && shape.q_len <= kDecodeBlockM &&
                     group <= kDecodeBlockM &&
                     static_cast<long long>(group) * shape.q_len <= kPackedRowLimit;
  return packs ? group : 1;
}

void pack_gqa(int group, AttentionShape& shape, AttentionBuffers& buffers) {
  if (group <= 1) return;
  shape.num_heads_q = shape.num_heads_kv;
  shape.q_len *= group;
  for (Strides* strides : {&buffers.q_strides, &buffers.out_strides}) {
    strides->row = strides->head;
    strides->head *= group;
  }
}

void attach_packing(const DecodingPlan& plan, const AttentionShape& shape,
                    const AttentionBuffers& buffers, FwdParams& params) {
  const int group = plan.group;
  params.pack_gqa = std::max(group, 1);
  params.pack_block_rows = plan.block_rows;
  params.pack_q_len = group > 1 ? shape.q_len : 1;
  params.pack_gqa_inverse = packed_row_inverse(params.pack_gqa);
  params.pack_q_stride = buffers.q_strides.row;
  params.pack_o_stride = buffers.out_strides.row;
}

int choose_packed_query_splits(const AttentionShape& shape, const SequenceTables& tables,
                               const codegen::KernelConfig& config, int multiprocessors,
                               std::optional<int> forced) {
  if (!config.split_kv || tables.q_starts == nullptr) return 1;
  AttentionShape together = shape;
  together.batch = 1;
  together.q_len = std::max(tables.q_total, 1);
  const int chosen = choose_num_splits(together, config, multiprocessors, forced);
  // Note: the grid's y extent is batch * num_heads_q * num_splits, at most 65535.
  const long long by_grid =
      65535 / std::max<long long>(1, static_cast<long long>(shape.batch) * shape.num_heads_q);
  return static_cast<int>(std::clamp<long long>(chosen, 1, std::max<long long>(by_grid, 1)));
}

SplitPlan plan_split(const AttentionShape& shape, const codegen::KernelConfig& config,
                     int num_splits, std::size_t offset, bool balanced, int packed_rows) {
  SplitPlan plan;
  const int kv_tiles = ceil_div(shape.kv_len, config.block_n);
  if (num_splits <= 1 || kv_tiles <= 1) return plan;
  if (balanced) {
    plan.num_splits = std::min(num_splits, kv_tiles);
    plan.balanced = true;
  } else {
    plan.split_tiles = ceil_div(kv_tiles, std::min(num_splits, kv_tiles));
    plan.num_splits = ceil_div(kv_tiles, plan.split_tiles);  // no empty trailing slice
  }
  if (plan.num_splits == 1) return SplitPlan{};
  constexpr std::size_t kAlign = 256;
  const auto aligned = [](std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; };
  const std::size_t heads =
      static_cast<std::size_t>(shape.batch) * static_cast<std::size_t>(shape.num_heads_q);
  const std::size_t rows = packed_rows > 0 ? static_cast<std::size_t>(shape.num_heads_q) *
                                                 static_cast<std::size_t>(packed_rows)
                                           : heads * static_cast<std::size_t>(shape.q_len);
  const std::size_t slices = static_cast<std::size_t>(plan.num_splits);
  plan.offset = aligned(offset);
  const std::size_t lse_bytes = aligned(slices * rows * sizeof(float));
  plan.o_offset = plan.offset + lse_bytes;
  const std::size_t o_bytes =
      slices * rows * static_cast<std::size_t>(shape.head_dim) * sizeof(float);
  plan.bytes = lse_bytes + o_bytes;
  if (plan.balanced) {
    plan.slots_offset = plan.o_offset + aligned(o_bytes);
    plan.bytes = plan.slots_offset - plan.offset + 2 * heads * sizeof(std::int32_t);
  }
  plan.combine.grid_x = static_cast<unsigned>(rows);  // a block per row (split_combine.cuh)
  plan.combine.threads = kCombineThreads;
  plan.combine.smem_bytes = static_cast<unsigned>(split_combine_smem_bytes(shape.head_dim));
  return plan;
}

bool balance_split(const AttentionShape& shape, const AttentionBuffers& buffers,
                   const codegen::KernelConfig& config, int block_n, const expr::Expression& mask,
                   const VariantArgs& args) {
  const SequenceTables& tables = buffers.sequences;
  // Note: of the sm90 family only the split kernel splits (its other kernels are never launched
  // with slices).
  if ((config.family != codegen::KernelFamily::sm80 && !config.split_kv) ||
      !codegen::reads_sequence_tables(config) || tables.q_starts != nullptr ||
      (tables.kv_lens == nullptr && tables.kv_starts == nullptr)) {
    return false;
  }
  const long long tiles = ceil_div(shape.kv_len, block_n);
  if (static_cast<long long>(shape.batch) * (tiles + 1) > std::numeric_limits<int>::max()) {
    return false;
  }
  if (mask.is_constant_true()) return true;
  if (mask.reads_tensors()) return false;
  const TileBounds first{0,
                         0,
                         0,
                         shape.q_len,
                         0,
                         std::min(block_n, shape.kv_len),
                         shape.q_len,
                         shape.kv_len,
                         shape.num_heads_q};
  return expr::classify_tile(mask, args, first) != kTileEmpty;
}

std::string describe_split(const SplitPlan& plan) {
  if (plan.balanced) {
    return fmt::format("{} slices a sequence on average, sized to its key count", plan.num_splits);
  }
  return fmt::format("{} slices of {} key tiles", plan.num_splits, plan.split_tiles);
}

SplitCombineParams attach_split(const SplitPlan& plan, const AttentionShape& shape,
                                const AttentionBuffers& buffers, void* scratch,
                                FwdParams& params) {
  auto* base = static_cast<unsigned char*>(scratch);
  params.num_splits = plan.num_splits;
  params.split_tiles = plan.split_tiles;
  params.lse_partial = reinterpret_cast<float*>(base + plan.offset);
  params.o_partial = reinterpret_cast<float*>(base + plan.o_offset);
  params.split_slots = plan.balanced ? reinterpret_cast<int*>(base + plan.slots_offset) : nullptr;
  SplitCombineParams combine{};
  combine.o_partial = params.o_partial;
  combine.lse_partial = params.lse_partial;
  combine.split_slots = params.split_slots;
  combine.pack_gqa = params.pack_gqa;
  // Note: the partials are packed rows exactly when the call's queries are (plan_split's
  // packed_rows), and the forward kernel writes them so (AttentionForward::partial_row0).
  combine.q_starts = buffers.sequences.q_starts;
  combine.q_total = buffers.sequences.q_total;
  combine.o = buffers.out;
  combine.o_stride[0] = buffers.out_strides.batch;
  combine.o_stride[1] = buffers.out_strides.head;
  combine.o_stride[2] = buffers.out_strides.row;
  combine.lse = buffers.lse;
  combine.batch = shape.batch;
  combine.num_heads_q = shape.num_heads_q;
  combine.q_len = shape.q_len;
  combine.num_splits = plan.num_splits;
  return combine;
}

FwdParams make_forward_params(const AttentionShape& shape, const AttentionBuffers& buffers,
                              const VariantArgs& args) {
  FwdParams params{};
  params.q = buffers.q;
  params.k = buffers.k;
  params.v = buffers.v;
  params.o = buffers.out;
  params.lse = buffers.lse;
  const std::pair<long long*, const Strides*> strides[] = {{params.q_stride, &buffers.q_strides},
                                                           {params.k_stride, &buffers.k_strides},
                                                           {params.v_stride, &buffers.v_strides},
                                                           {params.o_stride, &buffers.out_strides}};
  for (const auto& [out, in] : strides) {
    out[0] = in->batch;
    out[1] = in->head;
    out[2] = in->row;
  }
  params.batch = shape.batch;
  params.num_heads_q = shape.num_heads_q;
  params.num_heads_kv = shape.num_heads_kv;
  params.q_len = shape.q_len;
  params.kv_len = shape.kv_len;
  params.scale = effective_scale(shape, buffers);
  params.num_splits = 1;  // attach_split sets a split call's slices
  params.pack_gqa = 1;    // attach_packing sets a packed call's group
  params.pack_q_len = 1;
  params.pack_block_rows = 0;
  params.pack_gqa_inverse = packed_row_inverse(1);
  if (is_paged(buffers)) {
    const KvPages& pages = buffers.kv_pages;
    params.kv_pages = pages.table;
    params.kv_pages_stride = pages.table_width;
    params.kv_page = make_row_divisor(pages.page_size);
    params.kv_num_pages = pages.num_pages;
  }
  // Note: packed tensors are one batch entry of their rows; the kernel adds the sequence's first
  // row, so their batch strides (the caller's, unused) must not move it. A dense call with
  // sequence tables runs on the kernel of paged calls, which reads each sequence's keys as one
  // page (the batch entry) of kDensePageRows rows (attention_fwd.cuh, load_kv).
  params.sequences = buffers.sequences;
  if (has_sequence_tables(buffers) && !is_paged(buffers)) {
    params.kv_page = make_row_divisor(kDensePageRows);
    params.kv_num_pages = std::numeric_limits<int>::max();
  }
  if (packs_queries(buffers)) params.q_stride[0] = params.o_stride[0] = 0;
  if (packs_keys(buffers)) params.k_stride[0] = params.v_stride[0] = 0;
  params.args = args;
  return params;
}

std::string tma_limitation(const AttentionShape& shape, const AttentionBuffers& buffers) {
  if (is_paged(buffers) && buffers.kv_pages.page_size % kSm90MinPagedBoxRows != 0) {
    return fmt::format(
        "pages of {} rows: its boxes of keys and values need pages of a multiple of {} rows",
        buffers.kv_pages.page_size, kSm90MinPagedBoxRows);
  }
  const std::size_t element = dtype_size(buffers.q_dtype);
  const auto views = tensor_views(shape, buffers);
  for (std::size_t i = 0; i < 3; ++i) {  // query, key, value: what TMA loads
    const TensorView& view = views[i];
    if (reinterpret_cast<std::uintptr_t>(view.data) % kTmaAlignment != 0) {
      return fmt::format("the {} base address {} is not {}-byte aligned", view.name, view.data,
                         kTmaAlignment);
    }
    for (const ByteStride& stride : byte_strides(view, element, is_paged(buffers) && i > 0)) {
      if (stride.extent == 1) continue;
      if (stride.bytes <= 0 || stride.bytes % kTmaAlignment != 0 ||
          static_cast<std::uint64_t>(stride.bytes) >= kTmaStrideLimit) {
        return fmt::format("the {} {} stride of {} bytes is not a positive multiple of {} below "
                           "2^40",
                           view.name, stride.name, stride.bytes, kTmaAlignment);
      }
    }
  }
  return {};
}

namespace {

// A 4-d Q map {head_dim, q_len, heads, batch} as the packed GQA launch's 5-d one: the heads split
// into {group, heads / group} (the group's query heads adjacent), so that a box of {64, group, 1,
// block_m / group, 1} holds block_m / group whole queries, each query's group of heads in turn.
void pack_query_map(int group, int block_m, TensorMapRequest& q) {
  const auto g = static_cast<std::uint64_t>(group);
  const std::uint64_t len = q.dims[1], heads = q.dims[2], batch = q.dims[3];
  const std::uint64_t row_stride = q.strides[0], head_stride = q.strides[1];
  const std::uint64_t batch_stride = q.strides[2];
  q.rank = 5;
  q.dims[1] = g;
  q.dims[2] = heads / g;
  q.dims[3] = len;
  q.dims[4] = batch;
  q.strides[0] = head_stride;
  q.strides[1] = head_stride * g;
  q.strides[2] = row_stride;
  q.strides[3] = batch_stride;
  q.box[1] = static_cast<std::uint32_t>(group);
  q.box[2] = 1;
  q.box[3] = static_cast<std::uint32_t>(block_m / group);
  q.box[4] = 1;
}

}  // namespace

std::array<TensorMapRequest, 3> sm90_tensor_maps(const AttentionShape& shape,
                                                 const AttentionBuffers& buffers,
                                                 const codegen::KernelConfig& config, int group) {
  const std::size_t element = dtype_size(buffers.q_dtype);
  const auto views = tensor_views(shape, buffers);
  std::array<TensorMapRequest, 3> maps;
  for (std::size_t i = 0; i < maps.size(); ++i) {  // query, key, value
    const TensorView& view = views[i];
    TensorMapRequest& map = maps[i];
    map.address = view.data;
    map.dtype = buffers.q_dtype;
    map.dims[0] = static_cast<std::uint64_t>(shape.head_dim);
    map.dims[1] = static_cast<std::uint64_t>(view.len);
    map.dims[2] = static_cast<std::uint64_t>(view.heads);
    map.dims[3] = static_cast<std::uint64_t>(view.batch);  // a paged call's pools: pages
    const auto strides = byte_strides(view, element, is_paged(buffers) && i > 0);
    // Note: a dimension of extent 1 may have any stride (even 0) in the call; TMA never steps
    // along it, but the encoding still wants a valid one, so it gets the packed stride (the
    // inner dimensions' bytes).
    std::uint64_t packed = map.dims[0] * element;
    for (std::size_t d = 0; d < strides.size(); ++d) {
      map.strides[d] = strides[d].extent == 1 ? packed
                                              : static_cast<std::uint64_t>(strides[d].bytes);
      packed = map.strides[d] * map.dims[d + 1];
    }
    map.box[0] = kTmaBoxColumns;
    map.box[1] = static_cast<std::uint32_t>(
        i == 0              ? config.block_m
        : is_paged(buffers) ? sm90_paged_box_rows(buffers.kv_pages.page_size, config.block_n)
                            : config.block_n);
    map.box[2] = 1;
    map.box[3] = 1;
  }
  if (group > 1) pack_query_map(group, config.block_m, maps[0]);
  return maps;
}

std::array<TensorMapRequest, 2> sm90_paged_tail_maps(const std::array<TensorMapRequest, 3>& maps,
                                                     const AttentionShape& shape,
                                                     const AttentionBuffers& buffers) {
  // Note: kv_len - 1's row in its page is the last one read; a page of the tail maps ends there.
  const int page_size = buffers.kv_pages.page_size;
  const auto tail_rows = static_cast<std::uint64_t>((shape.kv_len - 1) % page_size + 1);
  std::array<TensorMapRequest, 2> tails = {maps[1], maps[2]};
  for (TensorMapRequest& tail : tails) tail.dims[1] = tail_rows;
  return tails;
}

SummaryPlan plan_summaries(const std::vector<expr::SummaryRequest>& requests,
                           const AttentionShape& shape, const codegen::KernelConfig& config,
                           const VariantArgs& args) {
  SummaryPlan plan;
  for (const expr::SummaryRequest& request : requests) {
    const bool q_axis = request.axis == expr::SummaryAxis::q;
    SummaryLaunch launch;
    launch.request = request;
    launch.len = args.tensors[request.tensor].dims[0];
    launch.index_len = q_axis ? shape.q_len : shape.kv_len;
    launch.granularity = q_axis ? config.block_m : config.block_n;
    launch.num_blocks = ceil_div(launch.index_len, launch.granularity);
    launch.offset = plan.total_ints;
    // Note: one warp per summary block (tensor_summary.cuh, docs/KERNELS.md).
    launch.grid.grid_x =
        static_cast<unsigned>(ceil_div(launch.num_blocks, kSummaryThreads / 32));
    launch.grid.threads = kSummaryThreads;
    plan.total_ints += 2 * static_cast<std::size_t>(launch.num_blocks);
    plan.launches.push_back(launch);
  }
  return plan;
}

void attach_summary(const SummaryLaunch& launch, const int* scratch, VariantArgs& args) {
  TensorArg& tensor = args.tensors[launch.request.tensor];
  const int* min = scratch + launch.offset;
  const TensorSummary summary{min, min + launch.num_blocks, launch.granularity, launch.num_blocks};
  (launch.request.axis == expr::SummaryAxis::q ? tensor.q_summary : tensor.kv_summary) = summary;
}

ForwardLaunch plan_forward_launch(const AttentionShape& shape, const AttentionBuffers& buffers,
                                  const codegen::KernelConfig& config, bool hooks_use_heads,
                                  const expr::Expression& mask,
                                  const std::vector<expr::SummaryRequest>& summary_requests,
                                  const VariantArgs& args, int multiprocessors,
                                  const LaunchChoices& choices) {
  ForwardLaunch launch;
  if (packs_queries(buffers)) {
    // Note: packed queries run on the forward entry, without GQA packing (which indexes rows of
    // a uniform q_len), split only on the sm90 split kernel (its partials are packed rows; the
    // sm80 family's forward entry keeps them whole).
    launch.decoding.config = config;
    launch.decoding.num_splits = choose_packed_query_splits(shape, buffers.sequences, config,
                                                            multiprocessors, choices.split_kv);
  } else {
    launch.decoding = plan_decoding(shape, config, hooks_use_heads, multiprocessors, choices);
  }
  const codegen::KernelConfig& entry_config = launch.decoding.config;
  launch.entry = launch.decoding.decode_entry ? codegen::kDecodeEntry : codegen::kForwardEntry;
  launch.shape = shape;
  launch.buffers = buffers;
  pack_gqa(launch.decoding.group, launch.shape, launch.buffers);
  // Note: the summaries of the call's own query axis, which is what the hooks index, at the
  // launched entry's tiles.
  launch.summaries = plan_summaries(summary_requests, shape, entry_config, args);
  launch.split =
      plan_split(launch.shape, entry_config, launch.decoding.num_splits,
                 launch.summaries.total_ints * sizeof(int),
                 choices.balance_split &&
                     balance_split(shape, launch.buffers, config, entry_config.block_n, mask, args),
                 packs_queries(buffers) ? buffers.sequences.q_total : 0);
  launch.grid = forward_grid(launch.shape, entry_config, multiprocessors, launch.split.num_splits);
  launch.scratch_bytes = launch.split.num_splits > 1
                             ? launch.split.offset + launch.split.bytes
                             : launch.summaries.total_ints * sizeof(int);
  return launch;
}

}  // namespace attnjit
