// A forward plan (src/runtime/forward_plan.cpp): the launch grid, the sm90 kernel's TMA tensor
// maps of Q, K and V, the calls TMA cannot express (which run on the sm80 kernel instead), and
// split-KV: how many slices a call's keys get and where their partials live.
#include "runtime/forward_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attnjit/sm90_fwd_params.cuh"
#include "codegen/variant_source.hpp"
#include "support/scoped_env.hpp"

using namespace attnjit;

namespace {

// A GQA call (4 query heads over 2 key/value heads) with lengths that are not multiples of the
// tiles, in the given layout, over fake 16-byte aligned addresses (nothing is dereferenced).
// `text` parsed as a mask with the parameters `params` ("W:int").
expr::Expression mask_of(const std::string& text, const std::vector<std::string>& params = {},
                         const std::vector<std::string>& tensors = {}) {
  expr::Signature signature;
  for (const std::string& p : params) signature.params.push_back(expr::parse_param_decl(p));
  for (const std::string& t : tensors) signature.tensors.push_back(expr::parse_tensor_decl(t));
  return expr::parse_expression(expr::ExprKind::mask, text, signature);
}

struct Call {
  AttentionShape shape{2, 4, 2, 100, 70, 64};
  AttentionBuffers buffers;
  alignas(16) static inline unsigned char memory[64];

  explicit Call(Layout layout) {
    buffers.q = memory;
    buffers.k = memory + 16;
    buffers.v = memory + 32;
    buffers.out = memory + 48;
    buffers.q_strides = layout_strides(layout, 4, 100, 64);
    buffers.k_strides = buffers.v_strides = layout_strides(layout, 2, 70, 64);
    buffers.out_strides = buffers.q_strides;
  }
};

}  // namespace

TEST_CASE(
    "a plain grid has a block per query tile and (batch head) and a persistent one a "
    "block per SM but at most one per work item",
    "[runtime]") {
  const AttentionShape shape{2, 4, 2, 300, 70, 64};  // 3 query tiles x 8 (batch, head) = 24 items
  codegen::KernelTuning tuning;
  const auto plain = forward_grid(shape, codegen::sm90_kernel_config(64, tuning), 132);
  CHECK(plain.grid_x == 3u);
  CHECK(plain.grid_y == 8u);
  CHECK(plain.threads == 384u);
  tuning.sm90_persistent = true;
  const auto config = codegen::sm90_kernel_config(64, tuning);
  const std::pair<int, unsigned> sms_to_blocks[] = {{132, 24u}, {24, 24u}, {4, 4u}, {1, 1u}};
  for (const auto& [multiprocessors, blocks] : sms_to_blocks) {
    INFO(multiprocessors << " SMs");
    const LaunchGrid grid = forward_grid(shape, config, multiprocessors);
    CHECK(grid.grid_x == blocks);
    CHECK(grid.grid_y == 1u);
    CHECK(grid.threads == 384u);
    CHECK(grid.smem_bytes == static_cast<unsigned>(config.smem_bytes));
  }
  // The sm80 kernel's grid does not depend on the SM count.
  const auto sm80 = codegen::choose_kernel_config(90, DType::bf16, 64);
  CHECK(forward_grid(shape, sm80, 4).grid_x == 3u);
  CHECK(forward_grid(shape, sm80, 4).grid_y == 8u);
}

TEST_CASE(
    "three consumer warpgroups (sm90_block_m=192): 512 threads, 192-row query tiles and "
    "Q boxes",
    "[runtime][tma]") {
  const AttentionShape shape{2, 4, 2, 400, 70, 64};  // 3 query tiles of 192 x 8 = 24 items
  codegen::KernelTuning tuning;
  tuning.sm90_block_m = 192;
  const auto config = codegen::sm90_kernel_config(64, tuning);
  const auto plain = forward_grid(shape, config, 132);
  CHECK(plain.grid_x == 3u);
  CHECK(plain.grid_y == 8u);
  CHECK(plain.threads == 512u);
  tuning.sm90_persistent = true;
  const auto persistent = forward_grid(shape, codegen::sm90_kernel_config(64, tuning), 4);
  CHECK(persistent.grid_x == 4u);
  CHECK(persistent.threads == 512u);
  const Call call(Layout::bhld);
  const auto maps = sm90_tensor_maps(call.shape, call.buffers, config);
  CHECK(maps[0].box[1] == 192u);
  CHECK(maps[1].box[1] == static_cast<unsigned>(config.block_n));
}

TEST_CASE("sm90 tensor maps are {head_dim, len, heads, batch} with byte strides and tile boxes",
          "[runtime][tma]") {
  const auto config = codegen::sm90_kernel_config(64);
  const Call bhld(Layout::bhld);
  CHECK(tma_limitation(bhld.shape, bhld.buffers).empty());
  const auto maps = sm90_tensor_maps(bhld.shape, bhld.buffers, config);
  const TensorMapRequest& q = maps[0];
  CHECK(q.address == bhld.buffers.q);
  CHECK(q.dims[0] == 64);
  CHECK(q.dims[1] == 100);
  CHECK(q.dims[2] == 4);
  CHECK(q.dims[3] == 2);
  CHECK(q.strides[0] == 64 * 2);
  CHECK(q.strides[1] == 100 * 64 * 2);
  CHECK(q.strides[2] == 4 * 100 * 64 * 2);
  CHECK(q.box[0] == 64);
  CHECK(q.box[1] == 128);
  CHECK((q.box[2] == 1 && q.box[3] == 1));
  for (const TensorMapRequest* kv : {&maps[1], &maps[2]}) {
    CHECK(kv->dims[1] == 70);
    CHECK(kv->dims[2] == 2);
    CHECK(kv->strides[1] == 70 * 64 * 2);
    CHECK(kv->box[1] == static_cast<unsigned>(config.block_n));
  }
  CHECK(maps[1].address == bhld.buffers.k);
  CHECK(maps[2].address == bhld.buffers.v);

  // [batch, len, heads, dim]: rows are a head apart, heads one row of the head dim apart.
  const Call blhd(Layout::blhd);
  const TensorMapRequest k = sm90_tensor_maps(blhd.shape, blhd.buffers, config)[1];
  CHECK(k.strides[0] == 2 * 64 * 2);
  CHECK(k.strides[1] == 64 * 2);
  CHECK(k.strides[2] == 70 * 2 * 64 * 2);
}

// A paged call (kv_len 70 of 2 sequences, pools of 9 pages of 16 rows, [pages, page, heads, dim]):
// K and V map the pools, pages in the batch's place, in boxes of a page (at most the key tile's
// largest power-of-two divisor); the tail maps cut each page after the row of key 69.
TEST_CASE("a paged call's sm90 tensor maps are the pools' in boxes of pages, with tail maps",
          "[runtime][tma]") {
  Call call(Layout::blhd);
  const std::int32_t table[2 * 5] = {3, 0, 7, 1, 2, 4, 6, 8, 5, -1};
  call.buffers.kv_pages = {table, 5, 16, 9};
  call.buffers.k_strides = call.buffers.v_strides = layout_strides(Layout::blhd, 2, 16, 64);
  const auto config = codegen::sm90_kernel_config(64);
  CHECK(tma_limitation(call.shape, call.buffers).empty());
  const auto maps = sm90_tensor_maps(call.shape, call.buffers, config);
  CHECK(maps[0].dims[3] == 2);  // Q: the call's batch
  for (const TensorMapRequest* kv : {&maps[1], &maps[2]}) {
    CHECK(kv->dims[1] == 16);
    CHECK(kv->dims[2] == 2);
    CHECK(kv->dims[3] == 9);
    CHECK(kv->strides[2] == 16 * 2 * 64 * 2);  // a page
    CHECK(kv->box[1] == 16u);
  }
  const auto tails = sm90_paged_tail_maps(maps, call.shape, call.buffers);
  for (const TensorMapRequest& tail : tails) {
    CHECK(tail.dims[1] == 6);  // key 69 is row 5 of its page
    CHECK(tail.dims[3] == 9);
    CHECK(tail.box[1] == 16u);
  }
  CHECK(tails[0].address == call.buffers.k);
  CHECK(tails[1].address == call.buffers.v);
  // Pages of 256: boxes of the whole key tile (its rows a power of two), at most 256 rows.
  call.buffers.kv_pages = {table, 5, 256, 9};
  call.buffers.k_strides = call.buffers.v_strides = layout_strides(Layout::blhd, 2, 256, 64);
  const auto large = sm90_tensor_maps(call.shape, call.buffers, config);
  CHECK(large[1].box[1] == static_cast<unsigned>(config.block_n & -config.block_n));
  CHECK(sm90_paged_tail_maps(large, call.shape, call.buffers)[0].dims[1] == 70);
  CHECK(sm90_paged_box_rows(32, 80) == 16);  // D=256's 80-key tiles: boxes of 16 rows
  // Pages of any multiple of 8 rows: boxes of the largest power of two dividing the page and the
  // tile, so that none crosses a page's end. Pages of 24 (3 boxes of 8 each): the tail map ends
  // after key 69, row 21 of its page.
  CHECK(sm90_paged_box_rows(528, 128) == 16);    // 16 x 33
  CHECK(sm90_paged_box_rows(7808, 128) == 128);  // 128 x 61
  CHECK(sm90_paged_box_rows(7808, 80) == 16);
  CHECK(sm90_paged_box_rows(24, 176) == 8);
  call.buffers.kv_pages = {table, 5, 24, 9};
  call.buffers.k_strides = call.buffers.v_strides = layout_strides(Layout::blhd, 2, 24, 64);
  CHECK(tma_limitation(call.shape, call.buffers).empty());
  const auto odd = sm90_tensor_maps(call.shape, call.buffers, config);
  CHECK(odd[1].dims[1] == 24);
  CHECK(odd[1].box[1] == 8u);
  CHECK(sm90_paged_tail_maps(odd, call.shape, call.buffers)[1].dims[1] == 22);
  // Pages of a size that is not a multiple of 8 rows: the sm90 kernel's boxes would not be whole
  // swizzle atoms.
  for (const int size : {4, 12, 100}) {
    call.buffers.kv_pages = {table, 5, size, 9};
    CHECK(tma_limitation(call.shape, call.buffers) ==
          fmt::format("pages of {} rows: its boxes of keys and values need pages of a multiple "
                      "of 8 rows",
                      size));
  }
}

TEST_CASE("a dimension of extent 1 gets a packed stride whatever the call's", "[runtime][tma]") {
  Call call(Layout::bhld);
  call.shape.batch = 1;
  call.shape.num_heads_q = call.shape.num_heads_kv = 1;
  call.buffers.k_strides.batch = 0;  // broadcast: legal for a single batch
  call.buffers.k_strides.head = 0;
  CHECK(tma_limitation(call.shape, call.buffers).empty());
  const TensorMapRequest k =
      sm90_tensor_maps(call.shape, call.buffers, codegen::sm90_kernel_config(64))[1];
  CHECK(k.strides[1] == 70 * 64 * 2);
  CHECK(k.strides[2] == 70 * 64 * 2);
}

TEST_CASE("tma_limitation names what TMA cannot express", "[runtime][tma]") {
  SECTION("a key broadcast over the batch (stride 0)") {
    Call call(Layout::bhld);
    call.buffers.k_strides.batch = 0;
    CHECK(tma_limitation(call.shape, call.buffers) ==
          "the key batch stride of 0 bytes is not a positive multiple of 16 below 2^40");
  }
  SECTION("a base address off 16 bytes") {
    Call call(Layout::bhld);
    call.buffers.v = Call::memory + 8;
    CHECK_THAT(tma_limitation(call.shape, call.buffers),
               Catch::StartsWith("the value base address ") &&
                   Catch::EndsWith(" is not 16-byte aligned"));
  }
  SECTION("a row stride that is not a multiple of 16 bytes") {
    Call call(Layout::bhld);
    call.buffers.q_strides.row = 68;
    CHECK(tma_limitation(call.shape, call.buffers) ==
          "the query row stride of 136 bytes is not a positive multiple of 16 below 2^40");
  }
  SECTION("a stride of 2^40 bytes") {
    Call call(Layout::bhld);
    call.buffers.q_strides.batch = std::int64_t{1} << 39;
    CHECK_THAT(tma_limitation(call.shape, call.buffers), Catch::Contains("query batch stride"));
  }
}

// ---- Split-KV (decoding).

TEST_CASE("split-KV: decoding calls split their keys, calls that fill the GPU do not",
          "[runtime]") {
  const auto sm80 = codegen::choose_kernel_config(90, DType::bf16, 128);  // 128 x 64 tiles
  REQUIRE(sm80.block_m == 128);
  REQUIRE(sm80.block_n == 64);
  // One query, 8 x 4 heads, 64K keys: 32 blocks of the one-block-per-SM kernel on 132 SMs. Four
  // slices give each SM its block (128 blocks); five would put two on some.
  CHECK(choose_num_splits({8, 4, 4, 1, 65536, 128}, sm80, 132) == 4);
  // One (batch, head): a slice an SM, up to kMaxSplits.
  const int lone = choose_num_splits({1, 1, 1, 1, 65536, 128}, sm80, 132);
  CHECK(lone >= 100);
  CHECK(lone <= kMaxSplits);
  // Prefill fills the GPU: 16K queries are 128 tiles per head.
  CHECK(choose_num_splits({1, 8, 8, 16384, 16384, 128}, sm80, 132) == 1);
  // 105 blocks on 132 SMs is 80% of a wave: no split.
  CHECK(choose_num_splits({1, 106, 106, 1, 65536, 128}, sm80, 132) == 1);
  // Short keys: a slice keeps at least kMinSplitTiles tiles.
  static_assert(kMinSplitTiles == 2);
  CHECK(choose_num_splits({1, 1, 1, 1, 3 * 64, 128}, sm80, 132) == 1);
  CHECK(choose_num_splits({1, 1, 1, 1, 4 * 64, 128}, sm80, 132) == 2);
  CHECK(choose_num_splits({1, 1, 1, 1, 9 * 64, 128}, sm80, 132) == 4);
  // The decoding entry (three blocks resident per SM) aims at two an SM: B=1, 32:8 heads packed
  // to 8 blocks of 4 rows, 4K keys (64 tiles): 32 slices of 2 tiles (256 blocks on 132 SMs); 16K
  // keys: 33 slices (264 blocks), which plan_split evens out to 32 of 8 tiles.
  const auto decoding = codegen::decode_config(sm80);
  REQUIRE(decoding.blocks_per_sm == 3);
  CHECK(choose_num_splits({1, 8, 8, 4, 4096, 128}, decoding, 132) == 32);
  CHECK(choose_num_splits({1, 8, 8, 4, 16384, 128}, decoding, 132) == 33);
  CHECK(plan_split({1, 8, 8, 4, 16384, 128}, decoding, 33, 0).num_splits == 32);
  // B=8: 64 blocks, 4 slices (256 blocks).
  CHECK(choose_num_splits({8, 8, 8, 4, 16384, 128}, decoding, 132) == 4);
  // The sm90 kernel splits only in its split kernel (KernelConfig::split_kv), nor does the
  // head-dim-32 kernel (no decoding features: has_decoding_features).
  CHECK_FALSE(splits_keys(codegen::sm90_kernel_config(128), 128));
  CHECK(choose_num_splits({1, 1, 1, 1, 65536, 128}, codegen::sm90_kernel_config(128), 132) == 1);
  const auto d32 = codegen::choose_kernel_config(90, DType::bf16, 32);
  CHECK(choose_num_splits({1, 1, 1, 1, 65536, 32}, d32, 132) == 1);
  CHECK(choose_num_splits({1, 1, 1, 1, 65536, 32}, d32, 132, 4) == 1);
}

// The sm90 split kernel (codegen::generate_split_kernel_source): calls of too few query tiles
// for one wave, whatever their query count, in slices of at least kSm90MinSplitTiles key tiles.
TEST_CASE("split-KV: the sm90 split kernel splits prefills of too few query tiles", "[runtime]") {
  const expr::Expression causal = mask_of("q_idx >= kv_idx");
  const expr::Expression noop = mask_of("true");
  const expr::Expression score = expr::parse_expression(expr::ExprKind::score, "score", {});
  const codegen::Target hopper(90, true);
  const auto split = codegen::split_kernel_config(causal, score, DType::bf16, 128, hopper, {});
  CHECK(split.family == codegen::KernelFamily::sm90);
  CHECK(split.split_kv);
  CHECK_FALSE(split.persistent);
  CHECK(split.block_m == 128);
  CHECK(split.block_n == 128);
  // Its block's words (sequence, balanced slice) in 16 bytes more than its layout's.
  CHECK(split.smem_bytes == sm90_forward_smem_bytes(128, 128, 128, split.num_stages, false,
                                                    split.p_in_smem, /*split_kv=*/true));
  CHECK(split.smem_bytes ==
        sm90_forward_smem_bytes(128, 128, 128, split.num_stages, false, split.p_in_smem) +
            kSm90SplitWordsBytes);
  CHECK(splits_keys(split, 128));
  // The head-dim-64 variants without a mask have 192-row blocks: their split kernel has 128.
  const auto wide = codegen::split_kernel_config(noop, score, DType::bf16, 64, hopper, {});
  CHECK(codegen::sm90_kernel_config(64, {}, /*masked=*/false).block_m == 192);
  CHECK(wide.block_m == 128);
  // A 512-query chunk of 8 heads over 32K keys (tensor parallelism's share of a 64-head model):
  // 32 blocks on 132 SMs; 4 slices give each SM a block (128).
  CHECK(choose_num_splits({1, 8, 1, 512, 32768, 128}, split, 132) == 4);
  // 16K queries fill the GPU.
  CHECK(choose_num_splits({1, 8, 1, 16384, 32768, 128}, split, 132) == 1);
  // A slice keeps at least kSm90MinSplitTiles tiles of 128 keys: 7 tiles do not split, 8 do.
  static_assert(kSm90MinSplitTiles == 4);
  CHECK(choose_num_splits({1, 1, 1, 128, 7 * 128, 128}, split, 132) == 1);
  CHECK(choose_num_splits({1, 1, 1, 128, 8 * 128, 128}, split, 132) == 2);
  // Forced counts are clamped to the key tiles only.
  CHECK(choose_num_splits({1, 8, 1, 16384, 32768, 128}, split, 132, 3) == 3);
  CHECK(choose_num_splits({1, 1, 1, 128, 3 * 128, 128}, split, 132, 8) == 3);
  // The sm90 split kernel of paged calls (which reads the sequence tables) balances its slices
  // over per-sequence key counts; the sm90 kernel of paged calls does not split.
  codegen::KernelConfig paged = split;
  paged.paged_kv = true;
  AttentionBuffers buffers;
  const std::int32_t lens = 0;
  buffers.sequences.kv_lens = &lens;
  CHECK(balance_split({2, 8, 1, 128, 4096, 128}, buffers, paged, 128, noop, {}));
  codegen::KernelConfig unsplit = paged;
  unsplit.split_kv = false;
  CHECK_FALSE(balance_split({2, 8, 1, 128, 4096, 128}, buffers, unsplit, 128, noop, {}));
}

// The sm90 split kernel packs a GQA group's query heads into its 128-row blocks where a few
// queries would fill them poorly, from 65 rows on (64 or fewer: the sm80 decoding entry's two
// blocks), in blocks of whole queries (126 rows for groups of 7).
TEST_CASE("packed GQA: a few queries of a group on the sm90 split kernel", "[runtime]") {
  const expr::Expression causal = mask_of("q_idx >= kv_idx");
  const expr::Expression score = expr::parse_expression(expr::ExprKind::score, "score", {});
  const auto split =
      codegen::split_kernel_config(causal, score, DType::bf16, 128, codegen::Target(90, true), {});
  CHECK(gqa_pack_group({1, 32, 4, 16, 32768, 128}, split, false) == 8);    // 128 rows: 1 block
  CHECK(gqa_pack_group({1, 32, 4, 40, 32768, 128}, split, false) == 8);    // 320: 3 blocks, not 8
  CHECK(gqa_pack_group({1, 32, 4, 8, 32768, 128}, split, false) == 1);     // 64: the decoding entry
  CHECK(gqa_pack_group({1, 32, 4, 9, 32768, 128}, split, false) == 8);     // 72
  CHECK(gqa_pack_group({1, 32, 4, 127, 32768, 128}, split, false) == 1);   // 8 blocks either way
  CHECK(gqa_pack_group({2, 2, 1, 130, 333, 128}, split, false) == 1);  // a prefill: 128+ queries
  CHECK(gqa_pack_group({1, 32, 16, 60, 32768, 128}, split, false) == 2);   // 120 rows: 1, not 2
  CHECK(gqa_pack_group({1, 32, 16, 100, 32768, 128}, split, false) == 1);  // 200: 2 either way
  // 7 heads (Qwen2.5's 28 over 4): blocks of 18 whole queries, 126 rows; 16 queries in 1.
  CHECK(gqa_pack_group({1, 28, 4, 16, 32768, 128}, split, false) == 7);
  CHECK(gqa_pack_group({1, 28, 4, 19, 32768, 128}, split, false) == 7);    // 2 blocks, not 7
  CHECK(gqa_pack_group({1, 33, 1, 16, 32768, 128}, split, false) == 1);    // a group of 33
  CHECK(gqa_pack_group({1, 64, 1, 16, 32768, 128}, split, false) == 1);    // a group of 64
  CHECK(gqa_pack_group({1, 32, 4, 16, 32768, 128}, split, true) == 1);     // h in an expression
  CHECK(gqa_pack_group({1, 32, 4, 1, 32768, 128}, split, false) == 1);     // one query: sm80
  CHECK(gqa_pack_group({1, 32, 4, 16, 32768, 128}, codegen::sm90_kernel_config(128), false) == 1);
  // The packed launch: 4 heads of 8 * 40 rows in 3 blocks each, split to fill 132 SMs.
  const DecodingPlan plan =
      plan_decoding({1, 32, 4, 40, 32768, 128}, split, false, 132, LaunchChoices{});
  CHECK(plan.group == 8);
  CHECK_FALSE(plan.decode_entry);
  CHECK(plan.num_splits > 1);
  CHECK(plan.block_rows == 128);
  CHECK(plan.config.block_m == 128);
  LaunchChoices off;
  off.pack_gqa = false;
  CHECK(plan_decoding({1, 32, 4, 40, 32768, 128}, split, false, 132, off).group == 1);
  // Groups of 7: 126-row blocks (18 queries), the launch's tiles too; 40 queries in 3.
  const AttentionShape qwen{1, 28, 4, 40, 32768, 128};
  const DecodingPlan seven = plan_decoding(qwen, split, false, 132, LaunchChoices{});
  CHECK(seven.group == 7);
  CHECK(seven.block_rows == 126);
  CHECK(seven.config.block_m == 126);
  AttentionShape packed_view = qwen;
  AttentionBuffers no_buffers;
  pack_gqa(7, packed_view, no_buffers);
  CHECK(forward_grid(packed_view, seven.config, 132, seven.num_splits).grid_x == 3u);
  FwdParams params{};
  attach_packing(seven, qwen, no_buffers, params);
  CHECK(params.pack_block_rows == 126);
  CHECK(params.pack_q_len == 40);
}

// A packed launch's Q map: {head_dim, group, groups, q_len, batch}, a box of whole queries.
TEST_CASE("sm90 tensor maps: a packed GQA launch's Q map has rank 5", "[runtime][tma]") {
  const auto config = codegen::sm90_kernel_config(64);
  const Call blhd(Layout::blhd);  // [2, 100, 4, 64] queries over 2 key/value heads
  const auto maps = sm90_tensor_maps(blhd.shape, blhd.buffers, config, 2);
  const TensorMapRequest& q = maps[0];
  CHECK(q.rank == 5);
  CHECK(q.dims[0] == 64);
  CHECK(q.dims[1] == 2);    // the group's query heads
  CHECK(q.dims[2] == 2);    // groups
  CHECK(q.dims[3] == 100);  // queries
  CHECK(q.dims[4] == 2);
  CHECK(q.strides[0] == 64 * 2);      // a query head
  CHECK(q.strides[1] == 2 * 64 * 2);  // a group
  CHECK(q.strides[2] == 4 * 64 * 2);  // a query
  CHECK(q.strides[3] == 100 * 4 * 64 * 2);
  CHECK(q.box[0] == 64);
  CHECK(q.box[1] == 2);
  CHECK(q.box[2] == 1);
  CHECK(q.box[3] == static_cast<unsigned>(config.block_m / 2));
  CHECK(q.box[4] == 1);
  // A group of 3 (over 1 key/value head): boxes of whole queries, 126 of the 128 rows.
  Call three(Layout::blhd);
  three.shape.num_heads_q = 3;
  three.shape.num_heads_kv = 1;
  three.buffers.q_strides = layout_strides(Layout::blhd, 3, 100, 64);
  const TensorMapRequest q3 = sm90_tensor_maps(three.shape, three.buffers, config, 3)[0];
  CHECK(q3.dims[1] == 3);
  CHECK(q3.dims[2] == 1);
  CHECK(q3.box[1] * q3.box[3] == 3u * (static_cast<unsigned>(config.block_m) / 3u));
  CHECK(maps[1].rank == 4);  // K and V as ever
  CHECK(sm90_tensor_maps(blhd.shape, blhd.buffers, config)[0].rank == 4);
}

TEST_CASE("packed GQA: one query per sequence, a group of query heads per block", "[runtime]") {
  const auto sm80 = codegen::choose_kernel_config(90, DType::bf16, 128);
  const AttentionShape decode{2, 32, 8, 1, 4096, 128};
  CHECK(gqa_pack_group(decode, sm80, false) == 4);
  CHECK(gqa_pack_group(decode, sm80, true) == 1);  // h or num_heads in an expression
  // A speculative step: its group's q_len * group rows in decoding blocks, where that entry
  // runs the step.
  CHECK(gqa_pack_group({2, 32, 8, 2, 4096, 128}, sm80, false) == 4);
  CHECK(gqa_pack_group({2, 32, 8, 8, 4096, 128}, sm80, false) == 4);         // 32 rows
  CHECK(gqa_pack_group({2, 32, 8, 9, 4096, 128}, sm80, false) == 4);         // 36: two blocks
  CHECK(gqa_pack_group({2, 64, 8, 32, 4096, 128}, sm80, false) == 8);        // 256: eight
  CHECK(gqa_pack_group({2, 32, 8, 33, 4096, 128}, sm80, false) == 1);        // not a decode step
  CHECK(gqa_pack_group({1, 64, 1, 2, 4096, 128}, sm80, false) == 1);         // a group of 64
  CHECK(gqa_pack_group({1, 64, 1, 1, 4096, 128}, sm80, false) == 64);        // one query: rows
  CHECK(gqa_pack_group({2, 32, 8, 2, 4096, 128}, sm80, false, false) == 1);  // no decoding entry
  CHECK(gqa_pack_group({2, 32, 8, 2, 4096, 128}, sm80, true) == 1);
  CHECK(gqa_pack_group({2, 8, 8, 1, 4096, 128}, sm80, false) == 1);   // no grouping
  CHECK(gqa_pack_group(decode, codegen::sm90_kernel_config(128), false) == 1);
  CHECK(gqa_pack_group({2, 32, 8, 1, 4096, 32}, codegen::choose_kernel_config(90, DType::bf16, 32),
                       false) == 1);

  // The packed view: 8 heads of 4 rows, the rows of q and out one query head apart.
  AttentionShape shape = decode;
  AttentionBuffers buffers;
  buffers.q_strides = layout_strides(Layout::blhd, 32, 1, 128);  // [B, 1, 32, 128]
  buffers.out_strides = layout_strides(Layout::bhld, 32, 1, 128);
  buffers.k_strides = buffers.v_strides = layout_strides(Layout::bhld, 8, 4096, 128);
  const Strides k = buffers.k_strides;
  pack_gqa(4, shape, buffers);
  CHECK(shape.num_heads_q == 8);
  CHECK(shape.num_heads_kv == 8);
  CHECK(shape.q_len == 4);
  CHECK(buffers.q_strides.row == 128);        // the next query head
  CHECK(buffers.q_strides.head == 4 * 128);   // the next group
  CHECK(buffers.q_strides.batch == 32 * 128);
  CHECK(buffers.out_strides.row == 128);
  CHECK(buffers.out_strides.head == 512);
  CHECK(buffers.k_strides.row == k.row);  // keys and values as they were
  CHECK(buffers.k_strides.head == k.head);
  // Split-KV then sees 2 x 8 blocks instead of 2 x 32.
  CHECK(choose_num_splits(shape, sm80, 132) == choose_num_splits({2, 8, 8, 1, 4096, 128}, sm80,
                                                                 132));
  // The kernel's packing fields: the group and the call's own query strides.
  FwdParams params{};
  DecodingPlan packed;
  packed.group = 4;
  attach_packing(packed, decode, buffers, params);
  CHECK(params.pack_gqa == 4);
  CHECK(params.pack_q_len == 1);
  CHECK(params.pack_block_rows == 0);  // the sm80 kernel's blocks run on across queries
  attach_packing(DecodingPlan{}, decode, buffers, params);
  CHECK(params.pack_gqa == 1);
}

TEST_CASE("packed GQA: a row's query is a multiply and a shift, exact where it is used",
          "[runtime]") {
  // Every group a packed decoding block can have (up to kDecodeBlockM heads of one query) and
  // every row below kPackedRowLimit, well past the block's kDecodeBlockM.
  static_assert(kDecodeBlockM <= kPackedRowLimit);
  int wrong = 0;
  for (int group = 1; group <= kDecodeBlockM; ++group) {
    const unsigned inverse = packed_row_inverse(group);
    for (int row = 0; row < kPackedRowLimit; ++row) {
      if (packed_row_query(row, inverse) != row / group) ++wrong;
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("packed GQA: a speculative step's rows are its queries of each query head", "[runtime]") {
  // B=2, 32 query heads over 8, 3 queries, [B, L, H, D] queries and [B, H, L, D] outputs.
  const AttentionShape step{2, 32, 8, 3, 4096, 128};
  AttentionBuffers buffers;
  buffers.q_strides = layout_strides(Layout::blhd, 32, 3, 128);
  buffers.out_strides = layout_strides(Layout::bhld, 32, 3, 128);
  buffers.k_strides = buffers.v_strides = layout_strides(Layout::bhld, 8, 4096, 128);
  AttentionShape shape = step;
  AttentionBuffers view = buffers;
  pack_gqa(4, shape, view);
  CHECK(shape.num_heads_q == 8);
  CHECK(shape.q_len == 12);  // 3 queries of 4 heads
  CHECK(view.q_strides.row == buffers.q_strides.head);
  CHECK(view.q_strides.head == 4 * buffers.q_strides.head);
  CHECK(view.out_strides.row == buffers.out_strides.head);
  FwdParams params{};
  DecodingPlan packed;
  packed.group = 4;
  attach_packing(packed, step, buffers, params);
  CHECK(params.pack_gqa == 4);
  CHECK(params.pack_q_len == 3);
  CHECK(params.pack_gqa_inverse == packed_row_inverse(4));
  CHECK(params.pack_q_stride == buffers.q_strides.row);    // 32 * 128: the next query
  CHECK(params.pack_o_stride == buffers.out_strides.row);  // 128
  // The call's plan: the decoding entry over 8 heads of 12 rows.
  const auto sm80 = codegen::choose_kernel_config(90, DType::bf16, 128);
  const DecodingPlan plan = plan_decoding(step, sm80, false, 132, LaunchChoices{});
  CHECK(plan.group == 4);
  CHECK(plan.decode_entry);
  LaunchChoices no_entry;
  no_entry.decode_entry = false;
  CHECK(plan_decoding(step, sm80, false, 132, no_entry).group == 1);
  // 16 queries of 8 heads: 128 rows, four decoding blocks per key/value head where unpacked
  // there were eight.
  const AttentionShape tree{1, 64, 8, 16, 4096, 128};
  const DecodingPlan wide = plan_decoding(tree, sm80, false, 132, LaunchChoices{});
  CHECK(wide.group == 8);
  CHECK(wide.decode_entry);
  CHECK(forward_grid({1, 8, 8, 128, 4096, 128}, wide.config, 132, 1).grid_x == 4);
}

TEST_CASE("split-KV: a forced slice count is clamped to the key tiles and the grid", "[runtime]") {
  const auto sm80 = codegen::choose_kernel_config(80, DType::bf16, 64);
  const AttentionShape shape{1, 2, 2, 1, 10 * sm80.block_n, 64};
  CHECK(choose_num_splits(shape, sm80, 132, 1) == 1);
  CHECK(choose_num_splits(shape, sm80, 132, 3) == 3);
  CHECK(choose_num_splits(shape, sm80, 132, 1000) == 10);
  // Forced even where the heuristic would not split (a full GPU).
  CHECK(choose_num_splits({4, 32, 32, 4096, 4096, 64}, sm80, 132, 2) == 2);
  // The grid's y extent (batch * heads * slices) stays within 65535.
  CHECK(choose_num_splits({1, 40000, 40000, 1, 100 * sm80.block_n, 64}, sm80, 132, 8) == 1);
}

TEST_CASE("split-KV: slices are balanced, never empty, and their partials placed after the "
          "summaries",
          "[runtime]") {
  const auto sm80 = codegen::choose_kernel_config(80, DType::bf16, 128);
  const AttentionShape shape{2, 3, 1, 5, 10 * sm80.block_n + 1, 128};  // 11 key tiles, 30 rows
  const SplitPlan four = plan_split(shape, sm80, 4, 100);
  CHECK(four.split_tiles == 3);  // ceil(11 / 4)
  CHECK(four.num_splits == 4);   // 3 + 3 + 3 + 2
  const SplitPlan six = plan_split(shape, sm80, 6, 100);
  CHECK(six.split_tiles == 2);
  CHECK(six.num_splits == 6);  // 2 x 5 + 1
  const SplitPlan five = plan_split(shape, sm80, 5, 100);
  CHECK(five.split_tiles == 3);  // ceil(11 / 5) = 3, so 4 slices suffice: none is empty
  CHECK(five.num_splits == 4);
  CHECK(four.offset == 256);  // after 100 bytes of summaries, 256-byte aligned
  CHECK(four.o_offset == 256 + 512);  // 4 x 30 LSEs = 480 bytes, rounded up
  CHECK(four.bytes == 512 + 4 * 30 * 128 * 4);
  CHECK(four.combine.grid_x == 30u);  // a block per row
  CHECK(four.combine.threads == static_cast<unsigned>(kCombineThreads));
  CHECK(four.combine.smem_bytes == 4u * kCombineWarps * (8 * 16 + 2));  // 16 lanes of 8 columns
  CHECK(plan_split(shape, sm80, 1, 100).num_splits == 1);
  CHECK(plan_split(shape, sm80, 1, 100).bytes == 0u);
  // The forward grid grows by the slices.
  CHECK(forward_grid(shape, sm80, 132, four.num_splits).grid_y == 2u * 3u * 4u);
}

TEST_CASE("split-KV with a mask: the slices partition the kept span in order, balanced",
          "[runtime]") {
  // (first kept tile, all tiles, slices): a window at the end of a long cache, a span shorter
  // than the slices, one that divides evenly, nothing kept, and everything kept.
  const int spans[][3] = {{1008, 1024, 16}, {1020, 1024, 16}, {0, 64, 8}, {1024, 1024, 4},
                          {3, 1000, 7}};
  for (const auto& [first, all, slices] : spans) {
    INFO("first " << first << ", all " << all << ", slices " << slices);
    int next = first;
    int smallest = all, largest = 0;
    for (int split = 0; split < slices; ++split) {
      const KeySlice slice = kept_span_slice(first, all, split, slices);
      CHECK(slice.begin == next);  // in order, no gap, no overlap
      CHECK(slice.end >= slice.begin);
      smallest = std::min(smallest, slice.end - slice.begin);
      largest = std::max(largest, slice.end - slice.begin);
      next = slice.end;
    }
    CHECK(next == std::max(first, all));  // the whole span, nothing past the last tile
    CHECK(largest - smallest <= 1);
  }
  // The window: 16 tiles over 16 slices, one each (an even split of all 1024 tiles would give
  // the first 15 slices none of them).
  CHECK(kept_span_slice(1008, 1024, 0, 16).begin == 1008);
  CHECK(kept_span_slice(1008, 1024, 0, 16).end == 1009);
  CHECK(kept_span_slice(1008, 1024, 15, 16).begin == 1023);
}

TEST_CASE("split-KV: the forward parameters point at the partials and the merge at the output",
          "[runtime]") {
  const auto sm80 = codegen::choose_kernel_config(80, DType::bf16, 64);
  Call call(Layout::blhd);
  call.shape.kv_len = 20 * sm80.block_n;
  float lse[2 * 4 * 100];
  call.buffers.lse = lse;
  const SplitPlan plan = plan_split(call.shape, sm80, 4, 0);
  REQUIRE(plan.num_splits == 4);
  alignas(256) static unsigned char scratch[4 * 800 * 65 * 4 + 4096];
  REQUIRE(plan.offset + plan.bytes <= sizeof scratch);
  FwdParams params = make_forward_params(call.shape, call.buffers, VariantArgs{});
  CHECK(params.num_splits == 1);
  const SplitCombineParams combine = attach_split(plan, call.shape, call.buffers, scratch, params);
  CHECK(params.num_splits == 4);
  CHECK(params.split_tiles == 5);
  CHECK(reinterpret_cast<unsigned char*>(params.lse_partial) == scratch + plan.offset);
  CHECK(reinterpret_cast<unsigned char*>(params.o_partial) == scratch + plan.o_offset);
  CHECK(combine.o_partial == params.o_partial);
  CHECK(combine.lse_partial == params.lse_partial);
  CHECK(combine.o == call.buffers.out);
  CHECK(combine.lse == lse);
  CHECK(combine.o_stride[0] == call.buffers.out_strides.batch);
  CHECK(combine.o_stride[2] == call.buffers.out_strides.row);
  CHECK(combine.num_splits == 4);
  CHECK(combine.q_len == 100);
  CHECK(combine.num_heads_q == 4);
  CHECK(combine.split_slots == nullptr);  // uniform
  CHECK(params.split_slots == nullptr);
  CHECK(combine.pack_gqa == 1);
}

// Packed queries (q_seq_starts) split only on the sm90 split kernel, counted by the query tiles
// their sequences have together, their partials the packed rows of each head and slice, the
// merge a block per (head, packed row) with the query table.
TEST_CASE("split-KV: packed queries split on the sm90 split kernel in packed rows", "[runtime]") {
  const expr::Expression causal = mask_of("q_idx >= kv_idx");
  const expr::Expression score = expr::parse_expression(expr::ExprKind::score, "score", {});
  codegen::KernelConfig split =
      codegen::split_kernel_config(causal, score, DType::bf16, 128, codegen::Target(90, true), {});
  split.paged_kv = true;
  const std::int32_t starts[] = {0, 300, 512};
  SequenceTables tables{};
  tables.q_starts = starts;
  tables.q_total = 512;
  // Two chunks of 300 and 212 queries, 8 heads, over 32K keys: about 4 query tiles a head, 32
  // blocks on 132 SMs (4 slices), where the padded count (2 x 3 tiles) would be 48.
  const AttentionShape chunks{2, 8, 1, 300, 32768, 128};
  CHECK(choose_packed_query_splits(chunks, tables, split, 132) ==
        choose_num_splits({1, 8, 1, 512, 32768, 128}, split, 132));
  CHECK(choose_packed_query_splits(chunks, tables, split, 132) == 4);
  CHECK(choose_packed_query_splits(chunks, tables, split, 132, 3) == 3);  // forced
  // Not on a kernel that does not split them, nor without packed queries.
  codegen::KernelConfig unsplit = split;
  unsplit.split_kv = false;
  CHECK(choose_packed_query_splits(chunks, tables, unsplit, 132) == 1);
  CHECK(choose_packed_query_splits(chunks, SequenceTables{}, split, 132) == 1);
  // Enough query tiles: 16K packed rows.
  tables.q_total = 16384;
  CHECK(choose_packed_query_splits(chunks, tables, split, 132) == 1);
  tables.q_total = 512;
  // The grid's y limit over the sequences: 4000 sequences of 8 heads leave 2 slices at most.
  CHECK(choose_packed_query_splits({4000, 8, 1, 1, 32768, 128}, tables, split, 132, 5) == 2);

  // The partials: 4 slices of 8 heads x 512 packed rows (not 2 x 8 x 300 padded).
  const SplitPlan plan = plan_split(chunks, split, 4, 0, false, tables.q_total);
  REQUIRE(plan.num_splits == 4);
  CHECK(plan.combine.grid_x == 8u * 512u);
  CHECK(plan.o_offset - plan.offset == (4u * 8 * 512 * 4 + 255) / 256 * 256);
  CHECK(plan.bytes == plan.o_offset - plan.offset + 4u * 8 * 512 * 128 * 4);
  AttentionBuffers buffers;
  buffers.sequences = tables;
  std::vector<unsigned char> scratch(plan.offset + plan.bytes);
  FwdParams params = make_forward_params(chunks, buffers, VariantArgs{});
  const SplitCombineParams combine = attach_split(plan, chunks, buffers, scratch.data(), params);
  CHECK(combine.q_starts == starts);
  CHECK(combine.q_total == 512);
  CHECK(combine.batch == 2);
  CHECK(combine.q_len == 300);
  // A call without packed queries: no table, rows batch x heads x q_len.
  const SplitCombineParams padded = attach_split(plan_split(chunks, split, 4, 0), chunks,
                                                 AttentionBuffers{}, scratch.data(), params);
  CHECK(padded.q_starts == nullptr);
  CHECK(plan_split(chunks, split, 4, 0).combine.grid_x == 2u * 8u * 300u);
}

TEST_CASE("split-KV: a balanced split places its slot table after the partials", "[runtime]") {
  const auto sm80 = codegen::choose_kernel_config(80, DType::bf16, 128);
  const AttentionShape shape{2, 3, 1, 5, 10 * sm80.block_n + 1, 128};  // 11 key tiles, 30 rows
  // The count is kept as asked (the device sizes the slices), within the key tiles.
  const SplitPlan five = plan_split(shape, sm80, 5, 100, /*balanced=*/true);
  CHECK(five.balanced);
  CHECK(five.num_splits == 5);
  CHECK(five.split_tiles == 0);
  CHECK(plan_split(shape, sm80, 40, 100, true).num_splits == 11);
  CHECK_FALSE(plan_split(shape, sm80, 1, 100, true).balanced);
  CHECK(five.offset == 256);
  CHECK(five.o_offset == 256 + 768);  // 5 x 30 LSEs = 600 bytes, rounded up
  const std::size_t o_bytes = 5 * 30 * 128 * 4;
  CHECK(five.slots_offset == five.o_offset + (o_bytes + 255) / 256 * 256);
  CHECK(five.bytes == five.slots_offset - five.offset + 2 * 6 * sizeof(std::int32_t));
  CHECK(describe_split(five) == "5 slices a sequence on average, sized to its key count");
  CHECK(describe_split(plan_split(shape, sm80, 4, 100)) == "4 slices of 3 key tiles");

  // Which calls balance: per-sequence key counts on a kernel with the sequence tables, a
  // variant without a mask or whose mask keeps the first key tile at the longest count.
  Call call(Layout::bhld);  // 100 queries, 70 keys
  call.shape.q_len = 1;
  auto paged = sm80;
  paged.paged_kv = true;
  const std::int32_t lens[2] = {70, 10};
  const expr::Expression none = mask_of("true");
  const VariantArgs no_args{};
  const auto balances = [&](const AttentionShape& s, const codegen::KernelConfig& config,
                            const expr::Expression& mask, const VariantArgs& args) {
    return balance_split(s, call.buffers, config, 64, mask, args);
  };
  CHECK_FALSE(balances(call.shape, paged, none, no_args));  // no key counts
  call.buffers.sequences.kv_lens = lens;
  CHECK(balances(call.shape, paged, none, no_args));
  CHECK_FALSE(balances(call.shape, sm80, none, no_args));  // no tables in the kernel
  // A causal mask over a cache keeps every sequence's keys: balanced.
  CHECK(balances(call.shape, paged, mask_of("kv_idx <= q_idx + kv_len - q_len"), no_args));
  // A sliding window at the end of the longest sequence keeps none of its first tile: uniform;
  // one as long as the cache does.
  const expr::Expression window =
      mask_of("kv_idx <= q_idx + kv_len - q_len && q_idx + kv_len - q_len - kv_idx < W", {"W:int"});
  VariantArgs width{};
  width.scalars[0] = 16;
  AttentionShape long_cache = call.shape;
  long_cache.kv_len = 1000;
  CHECK_FALSE(balances(long_cache, paged, window, width));
  width.scalars[0] = 1000;
  CHECK(balances(long_cache, paged, window, width));
  // A mask that reads a tensor: its kept keys are not the host's to know.
  CHECK_FALSE(
      balances(call.shape, paged, mask_of("doc[kv_idx] == 1", {}, {"doc:int32[1]"}), no_args));
  // The device's sums of key tiles must fit an int.
  AttentionShape huge = call.shape;
  huge.batch = 1 << 20;
  huge.kv_len = 1 << 20;
  CHECK_FALSE(balances(huge, paged, none, no_args));
  call.buffers.sequences.kv_lens = nullptr;
  call.buffers.sequences.kv_starts = lens;
  CHECK(balances(call.shape, paged, none, no_args));
  const std::int32_t starts[3] = {0, 3, 5};
  call.buffers.sequences.q_starts = starts;  // packed queries are never split
  CHECK_FALSE(balances(call.shape, paged, none, no_args));

  // The kernel and the merge both get the table; the merge also the launch's GQA packing.
  call.buffers.sequences = {};
  call.shape.q_len = 100;
  call.shape.kv_len = 20 * sm80.block_n;
  const SplitPlan plan = plan_split(call.shape, sm80, 4, 0, true);
  REQUIRE(plan.balanced);
  alignas(256) static unsigned char scratch[4 * 800 * 65 * 4 + 8192];
  REQUIRE(plan.offset + plan.bytes <= sizeof scratch);
  FwdParams params = make_forward_params(call.shape, call.buffers, VariantArgs{});
  params.pack_gqa = 2;
  const SplitCombineParams combine = attach_split(plan, call.shape, call.buffers, scratch, params);
  CHECK(reinterpret_cast<unsigned char*>(params.split_slots) == scratch + plan.slots_offset);
  CHECK(combine.split_slots == params.split_slots);
  CHECK(combine.pack_gqa == 2);
  CHECK(params.split_tiles == 0);
}

// The balanced split's chunk search (the kernel's, balanced_chunk_search) against every chunk
// tried on the host, over random ragged batches: the 32 candidates always hold one that fits,
// the smallest of them is the best chunk when the candidates cover every chunk between the
// bounds, and within one step of it otherwise; no chunk below the lower bound fits. Both
// kernels' floors: kMinSplitTiles (sm80), kSm90MinSplitTiles (the sm90 split kernel).
TEST_CASE("split-KV: the balanced chunk search finds the smallest chunk that fits", "[runtime]") {
  std::mt19937 random(2611);
  int exact = 0, stepped = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int min_tiles = trial % 2 == 0 ? kMinSplitTiles : kSm90MinSplitTiles;
    const int batch = 1 + static_cast<int>(random() % 48);
    const int num_splits = 2 + static_cast<int>(random() % 12);
    const int longest = 1 + static_cast<int>(random() % (trial % 4 == 0 ? 4096 : 300));
    std::vector<int> tiles(static_cast<std::size_t>(batch));
    int total = 0;
    for (int& t : tiles) {
      t = random() % 5 == 0 ? 0 : static_cast<int>(random() % (longest + 1));
      total += t;
    }
    const int slots = batch * num_splits;
    const auto used = [&](int chunk) {
      int sum = 0;
      for (const int t : tiles) sum += balanced_slices(t, chunk);
      return sum;
    };
    INFO("batch " << batch << ", slots " << slots << ", total " << total << ", at least "
                  << min_tiles << " tiles");
    const ChunkSearch search = balanced_chunk_search(total, slots, batch, min_tiles);
    CHECK(search.low >= min_tiles);
    CHECK(used(search.high) <= slots);
    if (search.low > min_tiles) CHECK(used(search.low - 1) > slots);
    int chosen = 0;
    for (int lane = 0; lane < 32 && chosen == 0; ++lane) {
      const int candidate = balanced_chunk_candidate(search, lane);
      if (used(candidate) <= slots) chosen = candidate;
    }
    int best = search.low;
    while (used(best) > slots) ++best;
    CHECK(chosen >= best);
    if (search.high - search.low < 32) {
      CHECK(chosen == best);
      ++exact;
    } else {
      CHECK(chosen < best + search.step);
      ++stepped;
    }
  }
  CHECK(exact > 100);  // both regimes drawn
  CHECK(stepped > 10);
}

TEST_CASE("split-KV: ATTNJIT_SPLIT_KV is auto, off or a count", "[runtime]") {
  const auto with = [](const char* value) {
    test::ScopedEnv env("ATTNJIT_SPLIT_KV", value);
    return split_kv_from_environment();
  };
  CHECK_FALSE(with(nullptr).has_value());
  CHECK_FALSE(with("").has_value());
  CHECK_FALSE(with("auto").has_value());
  CHECK(with("off") == 1);
  CHECK(with("1") == 1);
  CHECK(with("12") == 12);
  for (const char* bad : {"0", "-2", "two", "4x", " 4"}) {
    INFO(bad);
    CHECK_THROWS_WITH(with(bad), Catch::Contains("ATTNJIT_SPLIT_KV must be auto, off or a slice "
                                                 "count"));
  }
}

// The auto|off switches, each read by its own function and together by
// launch_choices_from_environment.
TEST_CASE(
    "ATTNJIT_PACK_GQA, ATTNJIT_DECODE_ENTRY, ATTNJIT_PDL, ATTNJIT_CARVEOUT and "
    "ATTNJIT_BALANCE_SPLIT are auto or off",
    "[runtime]") {
  const std::pair<const char*, bool (*)()> switches[] = {
      {"ATTNJIT_PACK_GQA", pack_gqa_from_environment},
      {"ATTNJIT_DECODE_ENTRY", decode_entry_from_environment},
      {"ATTNJIT_PDL", overlap_launches_from_environment},
      {"ATTNJIT_CARVEOUT", uniform_carveout_from_environment},
      {"ATTNJIT_BALANCE_SPLIT", balance_split_from_environment}};
  for (const auto& [name, read] : switches) {
    INFO(name);
    const auto with = [&](const char* value) {
      test::ScopedEnv env(name, value);
      return read();
    };
    CHECK(with(nullptr));
    CHECK(with(""));
    CHECK(with("auto"));
    CHECK_FALSE(with("off"));
    CHECK_THROWS_WITH(with("0"), Catch::Contains(std::string(name) + " must be auto or off"));
  }
  const test::ScopedEnv pack("ATTNJIT_PACK_GQA", "off");
  const test::ScopedEnv entry("ATTNJIT_DECODE_ENTRY", "off");
  const test::ScopedEnv split("ATTNJIT_SPLIT_KV", "3");
  const test::ScopedEnv pdl("ATTNJIT_PDL", "off");
  const test::ScopedEnv carveout("ATTNJIT_CARVEOUT", "off");
  const test::ScopedEnv balance("ATTNJIT_BALANCE_SPLIT", "off");
  const LaunchChoices choices = launch_choices_from_environment();
  CHECK_FALSE(choices.pack_gqa);
  CHECK_FALSE(choices.decode_entry);
  CHECK(choices.split_kv == 3);
  CHECK_FALSE(choices.overlap_launches);
  CHECK_FALSE(choices.uniform_carveout);
  CHECK(LaunchChoices{}.uniform_carveout);
  CHECK_FALSE(choices.balance_split);
  CHECK(LaunchChoices{}.balance_split);
}

// A call's later launches overlap the one before on sm_90 and later only, never during stream
// capture, and not with ATTNJIT_PDL=off.
TEST_CASE("programmatic dependent launches: where they are made", "[runtime]") {
  const LaunchChoices defaults;
  CHECK(defaults.overlap_launches);
  CHECK(overlap_launches(90, defaults, false));
  CHECK(overlap_launches(100, defaults, false));
  CHECK_FALSE(overlap_launches(90, defaults, true));
  CHECK_FALSE(overlap_launches(89, defaults, false));
  CHECK_FALSE(overlap_launches(80, defaults, false));
  LaunchChoices off;
  off.overlap_launches = false;
  CHECK_FALSE(overlap_launches(90, off, false));
}

TEST_CASE("the decoding entry: launches of at most 32 rows, in its own tiles", "[runtime]") {
  const auto sm80 = codegen::choose_kernel_config(90, DType::bf16, 128);
  REQUIRE(sm80.decode_block_n > 0);
  const codegen::KernelConfig decode = codegen::decode_config(sm80);
  CHECK(decode.block_m == kDecodeBlockM);
  CHECK(decode.num_warps == kDecodeWarps);
  CHECK(decode.block_n == sm80.decode_block_n);
  CHECK(decode.num_stages == sm80.decode_stages);
  CHECK(decode.smem_bytes ==
        forward_smem_bytes(128, kDecodeBlockM, decode.block_n, decode.num_stages));
  CHECK(decode.blocks_per_sm == sm80.decode_blocks_per_sm);

  const LaunchChoices defaults;
  // A GQA decoding step: packed 4 rows a block, on the decoding entry, split to fill 132 SMs
  // of its resident blocks.
  const AttentionShape step{2, 32, 8, 1, 32768, 128};
  const DecodingPlan packed = plan_decoding(step, sm80, false, 132, defaults);
  CHECK(packed.group == 4);
  CHECK(packed.decode_entry);
  CHECK(packed.config.block_m == kDecodeBlockM);
  CHECK(packed.num_splits ==
        plan_split({2, 8, 8, 4, 32768, 128}, decode,
                   choose_num_splits({2, 8, 8, 4, 32768, 128}, decode, 132), 0)
            .num_splits);
  CHECK(packed.num_splits > 1);
  // Up to 32 rows (a speculative step over a cache, or a group of 32) use it; 33 do not.
  CHECK(plan_decoding({1, 8, 8, 32, 4096, 128}, sm80, false, 132, defaults).decode_entry);
  CHECK(plan_decoding({1, 32, 1, 1, 4096, 128}, sm80, false, 132, defaults).decode_entry);
  const DecodingPlan rows33 = plan_decoding({1, 8, 8, 33, 4096, 128}, sm80, false, 132, defaults);
  CHECK_FALSE(rows33.decode_entry);
  CHECK(rows33.config.block_m == sm80.block_m);
  // A mask using h: unpacked, one row a block, still the decoding entry.
  const DecodingPlan by_head = plan_decoding(step, sm80, true, 132, defaults);
  CHECK(by_head.group == 1);
  CHECK(by_head.decode_entry);
  // ATTNJIT_DECODE_ENTRY=off: the forward entry's tiles, packing and splitting as before.
  LaunchChoices off;
  off.decode_entry = false;
  const DecodingPlan plain = plan_decoding(step, sm80, false, 132, off);
  CHECK_FALSE(plain.decode_entry);
  CHECK(plain.group == 4);
  CHECK(plain.config.block_m == sm80.block_m);
  CHECK(plain.config.block_n == sm80.block_n);
  // Neither the sm90 kernel nor the head-dim-32 one has it.
  const DecodingPlan sm90 =
      plan_decoding(step, codegen::sm90_kernel_config(128), false, 132, defaults);
  CHECK_FALSE(sm90.decode_entry);
  CHECK(sm90.group == 1);
  CHECK(sm90.num_splits == 1);
  const auto d32 = codegen::choose_kernel_config(90, DType::bf16, 32);
  CHECK(d32.decode_block_n == 0);
  CHECK_FALSE(plan_decoding({1, 8, 8, 1, 4096, 32}, d32, false, 132, defaults).decode_entry);
  CHECK_THROWS_WITH(codegen::decode_config(d32), Catch::Contains("no decoding entry"));
}

TEST_CASE("the decoding entry's tiles keep 3 blocks on an SM where they can", "[runtime]") {
  struct Expected {
    int sm, head_dim, block_n, stages, per_sm;
  };
  // H100 (228 KB an SM), A100 (164 KB), the 100 KB parts (sm_86, sm_89: fewer fit).
  const Expected table[] = {
      {90, 64, 64, 3, 4},  {90, 96, 64, 2, 4},  {90, 128, 64, 2, 3}, {90, 256, 16, 3, 3},
      {80, 64, 64, 3, 3},  {80, 96, 32, 3, 3},  {80, 128, 32, 2, 3}, {80, 256, 16, 2, 3},
      {86, 64, 32, 3, 3},  {86, 128, 32, 2, 2}, {89, 256, 16, 2, 2},
  };
  for (const Expected& e : table) {
    INFO("sm_" << e.sm << " head dim " << e.head_dim);
    const auto config = codegen::choose_kernel_config(e.sm, DType::bf16, e.head_dim);
    CHECK(config.decode_block_n == e.block_n);
    CHECK(config.decode_stages == e.stages);
    CHECK(config.decode_blocks_per_sm == e.per_sm);
    CHECK(config.decode_smem_bytes ==
          forward_smem_bytes(e.head_dim, kDecodeBlockM, e.block_n, e.stages));
  }
}

TEST_CASE("a forward launch on the decoding entry: its entry, grid, summaries and scratch",
          "[runtime]") {
  const auto sm80 = codegen::choose_kernel_config(90, DType::bf16, 64);
  Call call(Layout::bhld);
  call.shape = {2, 4, 2, 20, 3000, 64};
  call.buffers.q_strides = call.buffers.out_strides = layout_strides(Layout::bhld, 4, 20, 64);
  call.buffers.k_strides = call.buffers.v_strides = layout_strides(Layout::bhld, 2, 3000, 64);
  VariantArgs args{};
  static int ids[3000] = {};
  args.tensors[0].data = ids;
  args.tensors[0].dims[0] = 3000;
  args.tensors[0].rank = 1;
  const std::vector<expr::SummaryRequest> requests = {{0, expr::SummaryAxis::kv}};
  const expr::Expression mask = mask_of("ids[kv_idx] != 0", {}, {"ids:int32[1]"});
  const ForwardLaunch launch = plan_forward_launch(call.shape, call.buffers, sm80, false, mask,
                                                   requests, args, 132, LaunchChoices{});
  REQUIRE(launch.decoding.decode_entry);
  CHECK(std::string(launch.entry) == codegen::kDecodeEntry);
  CHECK(launch.grid.threads == 32u * kDecodeWarps);
  // 20 queries of a group of 2, packed: 40 rows, two 32-row blocks per key/value head.
  CHECK(launch.decoding.group == 2);
  CHECK(launch.grid.grid_x == 2u);
  CHECK(launch.grid.grid_y == static_cast<unsigned>(4 * launch.split.num_splits));
  CHECK(launch.grid.smem_bytes == static_cast<unsigned>(sm80.decode_smem_bytes));
  // The summaries are per key tile of the entry that reads them.
  REQUIRE(launch.summaries.launches.size() == 1);
  CHECK(launch.summaries.launches[0].granularity == sm80.decode_block_n);
  CHECK(launch.scratch_bytes == (launch.split.num_splits > 1
                                     ? launch.split.offset + launch.split.bytes
                                     : launch.summaries.total_ints * sizeof(int)));
  // On the forward entry (ATTNJIT_DECODE_ENTRY=off) the same call has the 128-row tiles.
  LaunchChoices off;
  off.decode_entry = false;
  const ForwardLaunch plain =
      plan_forward_launch(call.shape, call.buffers, sm80, false, mask, requests, args, 132, off);
  CHECK(std::string(plain.entry) == codegen::kForwardEntry);
  CHECK(plain.grid.threads == static_cast<unsigned>(32 * sm80.num_warps));
  CHECK(plain.summaries.launches[0].granularity == sm80.block_n);
}

