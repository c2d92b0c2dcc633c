// The short-rows rule (src/runtime/short_rows.cpp): the sampled count of kept key tiles against
// the block analysis tile by tile, the count's early stop, and the rule's choice for the shapes
// it was measured on (a sliding window of 1024 keys, causal) and the cases it must leave alone.
#include "runtime/short_rows.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "codegen/short_rows.hpp"
#include "expr/expression.hpp"
#include "expr/signature.hpp"
#include "reference/tile_census.hpp"
#include "runtime/forward_plan.hpp"
#include "support/scoped_env.hpp"

using namespace attnjit;

namespace {

struct Mask {
  expr::Signature signature;
  expr::Expression mask;
  VariantArgs args{};

  Mask(const std::string& text, const std::vector<std::string>& params = {},
       const std::vector<int>& values = {})
      : signature(make_signature(params)),
        mask(expr::parse_expression(expr::ExprKind::mask, text, signature)) {
    for (std::size_t i = 0; i < values.size(); ++i) args.scalars[i] = values[i];
  }
  static expr::Signature make_signature(const std::vector<std::string>& params) {
    expr::Signature s;
    for (const auto& p : params) s.params.push_back(expr::parse_param_decl(p));
    return s;
  }
};

// The kept (non-empty) tiles of every query tile of (b, h), tile by tile.
std::int64_t kept_by_census(const Mask& m, const AttentionShape& shape, int tile_q, int tile_kv) {
  const reference::TileCensus census = reference::count_tiles(m.mask, m.args, shape, tile_q, tile_kv);
  return census.full + census.partial;
}

AttentionShape shape_of(int batch, int heads, int q_len, int kv_len) {
  return {batch, heads, heads, q_len, kv_len, 64};
}

codegen::KernelConfig standard_config(const Mask& m) {
  const expr::Expression score =
      expr::parse_expression(expr::ExprKind::score, "score", m.signature);
  return codegen::kernel_config_for(m.mask, score, DType::bf16, 64, codegen::Target(90, true),
                                    codegen::FamilyRequest::sm90, codegen::KernelTuning{});
}

}  // namespace

TEST_CASE("the sampled kept-tile count is the block analysis's, tile by tile", "[short_rows]") {
  // Masks the interval analysis decides in large stretches (bands, prefixes), per head, and one
  // it cannot (every tile partial), over lengths that are not multiples of the tiles.
  const std::vector<Mask> masks = {
      {"q_idx >= kv_idx"},
      {"q_idx >= kv_idx && q_idx - kv_idx < W", {"W:int"}, {300}},
      {"kv_idx < prefix || q_idx >= kv_idx", {"prefix:int"}, {700}},
      {"q_idx / C == kv_idx / C", {"C:int"}, {200}},
      {"abs(q_idx - kv_idx) < 64 * (h + 1)"},
      {"((q_idx ^ kv_idx) & 1) == 0"},
      {"q_idx < 0"},
      {"kv_idx < kv_len"},
  };
  for (const Mask& m : masks) {
    INFO(m.mask.source());
    // One head: query tile i of n samples is tile i, so the sample is every query tile.
    const AttentionShape one_head = shape_of(1, 1, 1000, 1500);
    const int q_tiles = (1000 + 127) / 128;
    const KeptTileSample sample =
        sample_kept_tiles(m.mask, m.args, one_head, 128, 64, q_tiles, 1 << 30);
    CHECK(sample.query_tiles == q_tiles);
    CHECK_FALSE(sample.stopped);
    CHECK(sample.kept == kept_by_census(m, one_head, 128, 64));
    // One query tile: the sample is every head of every batch.
    const AttentionShape heads = shape_of(2, 3, 100, 900);
    const KeptTileSample per_head = sample_kept_tiles(m.mask, m.args, heads, 128, 128, 6, 1 << 30);
    CHECK(per_head.query_tiles == 6);
    CHECK(per_head.kept == kept_by_census(m, heads, 128, 128));
  }
}

TEST_CASE("the kept-tile count stops past its limit", "[short_rows]") {
  const Mask causal("q_idx >= kv_idx");
  const AttentionShape shape = shape_of(1, 8, 16384, 16384);
  const KeptTileSample all = sample_kept_tiles(causal.mask, causal.args, shape, 128, 128, 8, 1 << 30);
  CHECK(all.query_tiles == 8);
  // Query tiles 8, 24, .., 120 keep key tiles 0 to their own, inclusive.
  CHECK(all.kept == 9 + 25 + 41 + 57 + 73 + 89 + 105 + 121);
  const KeptTileSample stopped = sample_kept_tiles(causal.mask, causal.args, shape, 128, 128, 8, 50);
  CHECK(stopped.stopped);
  CHECK(stopped.kept > 50);
  CHECK(stopped.kept < all.kept);
}

TEST_CASE("the short-rows rule picks the two-blocks-per-SM kernel where rows are short",
          "[short_rows]") {
  const Mask window("q_idx >= kv_idx && q_idx - kv_idx < W", {"W:int"}, {1024});
  const Mask causal("q_idx >= kv_idx");
  const codegen::KernelConfig standard = standard_config(window);
  REQUIRE(codegen::has_short_rows_schedule(standard, 64, window.mask));
  constexpr int kSms = 132;
  // The measured shape (head dim 64, 16K, B = 2, H = 32): the window keeps 9 key tiles of 128 per
  // query tile, causal 64 on average.
  const AttentionShape measured = shape_of(2, 32, 16384, 16384);
  ShortRowsRule rule;
  const auto short_rows = [&](const Mask& m, const AttentionShape& shape) {
    return rule.decide(m.mask, m.args, shape, standard, kSms).short_rows;
  };
  const auto started = std::chrono::steady_clock::now();
  CHECK(short_rows(window, measured));
  const double first_us = std::chrono::duration<double, std::micro>(
                              std::chrono::steady_clock::now() - started).count();
  std::printf("short-rows rule, first decision at 16K (sliding window): %.1f us\n", first_us);
  CHECK_FALSE(short_rows(causal, measured));
  // Remembered: the same call again is a lookup, a new window a new decision (33 tiles: long).
  CHECK(short_rows(window, measured));
  Mask wide = window;
  wide.args.scalars[0] = 4096;
  CHECK_FALSE(short_rows(wide, measured));
  CHECK(short_rows(window, measured));
  // Causal rows are short at 1K, and 64K windows as short as at 16K.
  CHECK(short_rows(causal, shape_of(32, 32, 1024, 1024)));
  CHECK(short_rows(window, shape_of(1, 16, 65536, 65536)));
  // Too few blocks for two per SM: one batch of 2 heads at 16K is 256 blocks, under 2 x 132.
  CHECK_FALSE(short_rows(window, shape_of(1, 2, 16384, 16384)));
  CHECK(short_rows(window, shape_of(1, 3, 16384, 16384)));
}

TEST_CASE("the short-rows rule's verdict carries its count, remembered, and says it in words",
          "[short_rows]") {
  const Mask window("q_idx >= kv_idx && q_idx - kv_idx < W", {"W:int"}, {1024});
  const Mask causal("q_idx >= kv_idx");
  const codegen::KernelConfig standard = standard_config(window);
  constexpr int kSms = 132;
  const AttentionShape measured = shape_of(2, 32, 16384, 16384);
  ShortRowsRule rule;
  const ShortRowsVerdict first = rule.decide(window.mask, window.args, measured, standard, kSms);
  CHECK(first.short_rows);
  CHECK(first.sampled);
  CHECK(first.blocks == 2 * 32 * 128);
  CHECK(first.sample.query_tiles == 8);
  CHECK(first.sample.kept >= 8 * 9);
  CHECK(first.sample.kept <= 8 * 10);
  const ShortRowsVerdict again = rule.decide(window.mask, window.args, measured, standard, kSms);
  CHECK(again.sample.kept == first.sample.kept);
  CHECK(describe(first, kSms) ==
        fmt::format("short rows ({} kept key tiles in 8 sampled query tiles; short: at most 12 a "
                    "tile)",
                    first.sample.kept));
  const ShortRowsVerdict longer = rule.decide(causal.mask, causal.args, measured, standard, kSms);
  CHECK_FALSE(longer.short_rows);
  CHECK(longer.sample.stopped);
  CHECK_THAT(describe(longer, kSms), Catch::StartsWith("long rows (over "));
  const ShortRowsVerdict few =
      rule.decide(window.mask, window.args, shape_of(1, 2, 16384, 16384), standard, kSms);
  CHECK_FALSE(few.sampled);
  CHECK(few.blocks == 256);
  CHECK(describe(few, kSms) ==
        "too few blocks for two per SM (256 blocks on 132 SMs, fewer than 2 per SM)");
}

TEST_CASE("only masked head-dim-64 variants of the sm90 kernel's default tiles have short rows",
          "[short_rows]") {
  const Mask window("q_idx >= kv_idx && q_idx - kv_idx < W", {"W:int"}, {1024});
  const codegen::KernelConfig standard = standard_config(window);
  CHECK(codegen::has_short_rows_schedule(standard, 64, window.mask));
  CHECK_FALSE(codegen::has_short_rows_schedule(standard, 128, window.mask));
  const Mask everything("true");
  CHECK_FALSE(codegen::has_short_rows_schedule(standard_config(everything), 64, everything.mask));
  expr::Signature with_doc;
  with_doc.tensors.push_back(expr::parse_tensor_decl("doc:int32[1]"));
  const expr::Expression document =
      expr::parse_expression(expr::ExprKind::mask, "doc[q_idx] == doc[kv_idx]", with_doc);
  CHECK_FALSE(codegen::has_short_rows_schedule(standard, 64, document));
  // Tuned tiles and the sm80 kernel have none.
  codegen::KernelConfig tuned = standard;
  tuned.block_m = 192;
  CHECK_FALSE(codegen::has_short_rows_schedule(tuned, 64, window.mask));
  codegen::KernelConfig sm80 = standard;
  sm80.family = codegen::KernelFamily::sm80;
  CHECK_FALSE(codegen::has_short_rows_schedule(sm80, 64, window.mask));
  // The short-rows kernel's configuration: two blocks per SM with the handoff.
  const expr::Expression score = expr::parse_expression(expr::ExprKind::score, "score", {});
  const codegen::KernelConfig short_rows = codegen::kernel_config_for(
      window.mask, score, DType::bf16, 64, codegen::Target(90, true), codegen::FamilyRequest::sm90,
      codegen::short_rows_tuning());
  CHECK(short_rows.blocks_per_sm == 2);
  CHECK(short_rows.tile_handoff);
  CHECK(short_rows.block_m == standard.block_m);
}

TEST_CASE("ATTNJIT_SHORT_ROWS is auto or off", "[short_rows]") {
  {
    const test::ScopedEnv unset("ATTNJIT_SHORT_ROWS", nullptr);
    CHECK(short_rows_from_environment());
    CHECK(launch_choices_from_environment().short_rows);
  }
  {
    const test::ScopedEnv off("ATTNJIT_SHORT_ROWS", "off");
    CHECK_FALSE(short_rows_from_environment());
    CHECK_FALSE(launch_choices_from_environment().short_rows);
  }
  const test::ScopedEnv bad("ATTNJIT_SHORT_ROWS", "sometimes");
  CHECK_THROWS_WITH(short_rows_from_environment(),
                    Catch::Contains("ATTNJIT_SHORT_ROWS must be auto or off; got 'sometimes'"));
}
