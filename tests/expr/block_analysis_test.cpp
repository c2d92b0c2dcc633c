// Interval classification of tiles (src/expr/block_analysis.cpp): soundness against brute force
// on thousands of random masks, exactness for the standard masks.
#include "expr/block_analysis.hpp"

#include <catch2/catch.hpp>
#include <limits>
#include <random>

#include "expr/eval_support.hpp"
#include "expr/random_expr.hpp"
#include "expr/test_support.hpp"

using namespace attnjit;
using namespace attnjit::test;

namespace {

struct BruteForce {
  bool any_kept = false;
  bool any_masked = false;
  TileClass tile_class() const {
    return !any_kept ? kTileEmpty : !any_masked ? kTileFull : kTilePartial;
  }
};

BruteForce brute_force(const expr::Expression& mask, const VariantArgs& args, const TileBounds& tile) {
  BruteForce result;
  for (int q = tile.q_begin; q < tile.q_end; ++q) {
    for (int kv = tile.kv_begin; kv < tile.kv_end; ++kv) {
      const expr::ElementIndex at{tile.b, tile.h, q, kv, tile.q_len, tile.kv_len, tile.num_heads};
      (expr::evaluate_mask(mask, args, at) ? result.any_kept : result.any_masked) = true;
    }
  }
  return result;
}

TileBounds make_tile(int q_begin, int q_end, int kv_begin, int kv_end, int len) {
  return TileBounds{0, 1, q_begin, q_end, kv_begin, kv_end, len, len, 4};
}

// Every aligned tile of size `block` over a len x len matrix.
template <typename Fn>
void for_each_tile(int len, int block, Fn&& fn) {
  for (int q = 0; q < len; q += block) {
    for (int kv = 0; kv < len; kv += block) {
      fn(make_tile(q, std::min(q + block, len), kv, std::min(kv + block, len), len));
    }
  }
}

}  // namespace

TEST_CASE("causal, sliding window and prefix-LM masks classify exactly") {
  auto [source, w, prefix] = GENERATE(table<const char*, int, int>({
      {"q_idx >= kv_idx", 0, 0},
      {"q_idx >= kv_idx && q_idx - kv_idx < W", 5, 0},
      {"q_idx >= kv_idx && q_idx - kv_idx < W", 16, 0},
      {"kv_idx < prefix || q_idx >= kv_idx", 0, 13},
      {"kv_idx < prefix || q_idx >= kv_idx", 0, 32},
      {"q_idx + kv_len - q_len >= kv_idx", 0, 0},
  }));
  const auto mask = parse_mask(source);
  VariantArgs args{};
  args.scalars[0] = w;
  args.scalars[2] = prefix;
  const int block = GENERATE(1, 4, 8, 16);
  CAPTURE(source, w, prefix, block);
  int checked = 0;
  for_each_tile(70, block, [&](const TileBounds& tile) {
    REQUIRE(expr::classify_tile(mask, args, tile) == brute_force(mask, args, tile).tile_class());
    ++checked;
  });
  CHECK(checked > 0);
}

TEST_CASE("a sorted document mask classifies exactly with summaries") {
  // Documents of uneven lengths, some shorter than a tile, some spanning several.
  std::vector<int> doc;
  for (int d = 0, len = 3; doc.size() < 96; ++d, len = (len * 7) % 37 + 1) {
    for (int i = 0; i < len && doc.size() < 96; ++i) doc.push_back(d);
  }
  const int len = static_cast<int>(doc.size());
  const auto mask = parse_mask("doc[q_idx] == doc[kv_idx]");
  const auto requests = expr::summary_requests(mask);
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].tensor == 0);
  CHECK(requests[0].axis == expr::SummaryAxis::q);
  CHECK(requests[1].axis == expr::SummaryAxis::kv);

  const int block = GENERATE(4, 8, 16);
  const int granularity = GENERATE(1, 2, 4);
  CAPTURE(block, granularity);
  VariantArgs args{};
  args.tensors[0] = tensor_arg(doc, len);
  const expr::HostSummary q_summary = expr::build_summary(args.tensors[0], granularity, len);
  const expr::HostSummary kv_summary = expr::build_summary(args.tensors[0], granularity, len);
  args.tensors[0].q_summary = q_summary.view();
  args.tensors[0].kv_summary = kv_summary.view();
  int full = 0, empty = 0;
  for_each_tile(len, block, [&](const TileBounds& tile) {
    const TileClass expected = brute_force(mask, args, tile).tile_class();
    REQUIRE(expr::classify_tile(mask, args, tile) == expected);
    full += expected == kTileFull;
    empty += expected == kTileEmpty;
  });
  if (block <= 8) CHECK(full > 0);
  CHECK(empty > 0);
}

TEST_CASE("without summaries tensor reads are unknown, never wrong") {
  const std::vector<int> doc(32, 0);
  VariantArgs args{};
  args.tensors[0] = tensor_arg(doc, 32);
  const auto mask = parse_mask("doc[q_idx] == doc[kv_idx]");
  CHECK(expr::classify_tile(mask, args, make_tile(0, 8, 0, 8, 32)) == kTilePartial);
}

TEST_CASE("reads at indices of one value per tile (per-sequence lengths) classify exactly") {
  // doc[b]: each sequence's cache length (the third past kv_len, the fourth out of the tensor:
  // it reads 0); bias[b, h]: each (sequence, head)'s first key, as a float.
  const std::vector<int> lengths = {40, 7, 120};
  const std::vector<float> starts = {0.0f, 9.0f, 3.0f, 0.0f, 33.0f, 1.5f};
  const auto mask = parse_mask(
      "kv_idx < doc[b] && float(kv_idx) >= bias[b, h] && q_idx + kv_len - q_len >= kv_idx");
  CHECK(expr::summary_requests(mask).empty());
  VariantArgs args{};
  args.tensors[0] = tensor_arg(lengths, 3);
  args.tensors[1] = tensor_arg(starts, 3, 2, 2);
  const int len = 64;
  const int block = GENERATE(4, 16);
  CAPTURE(block);
  int empty = 0, full = 0;
  for (int b = 0; b < 4; ++b) {
    for (int h = 0; h < 2; ++h) {
      for_each_tile(len, block, [&](TileBounds tile) {
        tile.b = b;
        tile.h = h;
        CAPTURE(b, h, tile.q_begin, tile.kv_begin);
        const TileClass expected = brute_force(mask, args, tile).tile_class();
        REQUIRE(expr::classify_tile(mask, args, tile) == expected);
        empty += expected == kTileEmpty;
        full += expected == kTileFull;
      });
    }
  }
  // Past each sequence's length every tile is empty, and sequence 3's length reads 0.
  CHECK(empty > 8 * (len / block) * (len / block) / 2);
  CHECK(full > 0);
}

TEST_CASE("a one-query decoding step reads its document id at its cache position exactly") {
  // doc[q_idx + prefix]: the query's id at its position in the cache (prefix = kv_len - q_len),
  // one element over a one-row query tile; doc[kv_idx] through the summaries.
  std::vector<int> doc(96);
  for (int i = 0; i < 96; ++i) doc[static_cast<std::size_t>(i)] = i / 20;
  const auto mask = parse_mask("doc[q_idx + prefix] == doc[kv_idx]");
  REQUIRE(expr::summary_requests(mask).size() == 1);
  VariantArgs args{};
  args.scalars[2] = 95;  // prefix: the query is the cache's last position, document 4
  args.tensors[0] = tensor_arg(doc, 96);
  const expr::HostSummary kv_summary = expr::build_summary(args.tensors[0], 8, 96);
  args.tensors[0].kv_summary = kv_summary.view();
  int empty = 0;
  for (int kv = 0; kv < 96; kv += 8) {
    const TileBounds tile{0, 0, 0, 1, kv, std::min(kv + 8, 96), 1, 96, 1};
    CAPTURE(kv);
    const TileClass expected = brute_force(mask, args, tile).tile_class();
    CHECK(expr::classify_tile(mask, args, tile) == expected);
    empty += expected == kTileEmpty;
  }
  CHECK(empty == 10);  // keys 0-79 are documents 0-3
}

TEST_CASE("a read at an index that varies over the tile stays unknown") {
  const std::vector<int> doc(64, 5);
  VariantArgs args{};
  args.tensors[0] = tensor_arg(doc, 64);
  // doc[kv_idx % 3] is not a summarised read (its index is not kv_idx itself).
  CHECK(expr::classify_tile(parse_mask("doc[kv_idx % 3] == 5"), args, make_tile(0, 8, 0, 8, 64)) ==
        kTilePartial);
  // One element: its value decides, on a one-key tile as on any other.
  CHECK(expr::classify_tile(parse_mask("doc[kv_idx % 3] == 5"), args, make_tile(0, 8, 4, 5, 64)) ==
        kTileFull);
  // A NaN read is unknown, never wrong.
  const std::vector<float> bias = {std::numeric_limits<float>::quiet_NaN()};
  args.tensors[1] = tensor_arg(bias, 1, 1, 2);
  CHECK(expr::classify_tile(parse_mask("float(kv_idx) < bias[0, 0]"), args,
                            make_tile(0, 8, 0, 8, 64)) == kTilePartial);
}

TEST_CASE("summaries include 0 for blocks past the tensor's end") {
  const std::vector<int> data = {5, 5, 5, 7, 7};
  const TensorArg arg = tensor_arg(data, 5);
  const expr::HostSummary summary = expr::build_summary(arg, 2, 8);
  REQUIRE(summary.min.size() == 4);
  CHECK(summary.min == std::vector<int>{5, 5, 0, 0});
  CHECK(summary.max == std::vector<int>{5, 7, 7, 0});
  CHECK(summary.view().num_blocks == 4);
}

TEST_CASE("random masks are classified soundly") {
  const expr::Signature signature = random_signature();
  RandomExpr generator(12345);
  std::mt19937 rng(777);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int parsed = 0, decided = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    const std::string source = generator.mask(uniform(1, 4));
    const auto mask = expr::parse_expression(expr::ExprKind::mask, source, signature);
    ++parsed;
    const int len = uniform(1, 48);
    // doc: sorted document ids (sometimes shorter than len, so reads go out of range);
    // tab: small random ints; bias: random floats.
    std::vector<int> doc(static_cast<std::size_t>(uniform(0, len + 4)));
    for (std::size_t i = 0, d = 0; i < doc.size(); ++i) {
      if (uniform(0, 5) == 0) ++d;
      doc[i] = static_cast<int>(d) - (iteration % 3 == 0 ? 2 : 0);
    }
    std::vector<int> tab(12);
    for (int& v : tab) v = uniform(-6, 6);
    std::vector<float> bias(12);
    for (float& v : bias) v = static_cast<float>(uniform(-100, 100)) / 8.0f;
    VariantArgs args{};
    const int extreme[] = {0, 1, -1, 2147483647, -2147483647 - 1, 31, 32};
    args.scalars[0] = uniform(0, 6) == 0 ? extreme[uniform(0, 6)] : uniform(-4, 40);
    args.scalars[1] = uniform(0, 40) - 8;
    args.scalars[2] = float_bits(static_cast<float>(uniform(-20, 20)) / 4.0f);
    args.tensors[0] = tensor_arg(doc, static_cast<int>(doc.size()));
    args.tensors[1] = tensor_arg(tab, 3, 4, 2);
    args.tensors[2] = tensor_arg(bias, 4, 3, 2);
    expr::HostSummary q_summary, kv_summary;
    if (uniform(0, 3) != 0) {
      q_summary = expr::build_summary(args.tensors[0], uniform(1, 8), len);
      kv_summary = expr::build_summary(args.tensors[0], uniform(1, 8), len);
      args.tensors[0].q_summary = q_summary.view();
      args.tensors[0].kv_summary = kv_summary.view();
    }
    for (int t = 0; t < 4; ++t) {
      const int q_begin = uniform(0, len - 1), kv_begin = uniform(0, len - 1);
      TileBounds tile{uniform(0, 2), uniform(0, 7), q_begin, std::min(len, q_begin + uniform(1, 16)),
                      kv_begin, std::min(len, kv_begin + uniform(1, 16)), len, len, 8};
      const TileClass claimed = expr::classify_tile(mask, args, tile);
      const BruteForce truth = brute_force(mask, args, tile);
      if (claimed == kTileEmpty && truth.any_kept) FAIL("claimed empty, an element is kept: " << source);
      if (claimed == kTileFull && truth.any_masked) FAIL("claimed full, an element is masked: " << source);
      decided += claimed != kTilePartial;
    }
  }
  CHECK(parsed == 3000);
  CHECK(decided > 1000);  // the analysis is not trivially "partial"
}

TEST_CASE("float comparisons with possible NaN stay unknown") {
  VariantArgs args{};
  args.scalars[1] = float_bits(0.0f);
  const auto mask = parse_mask("cap / cap < 1.0 || true == false");
  CHECK(expr::classify_tile(mask, args, make_tile(0, 4, 0, 4, 4)) == kTilePartial);
  CHECK(expr::evaluate_mask(mask, args, element(0, 0)) == false);
}

TEST_CASE("summary requests are computed once, when the expression is built") {
  const auto mask = parse_mask("doc[q_idx] == doc[kv_idx] && doc[q_idx] > 0");
  const auto copy = mask;
  // The same vector on every call and in every copy: a forward call does not recompute it.
  CHECK(&expr::summary_requests(mask) == &expr::summary_requests(mask));
  CHECK(&expr::summary_requests(copy) == &expr::summary_requests(mask));
  CHECK(expr::summary_requests(mask).size() == 2);
}
