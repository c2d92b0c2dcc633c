#include "runtime/short_rows.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.hpp"
#include "common/int_math.hpp"
#include "common/log.hpp"
#include "expr/block_analysis.hpp"

namespace attnjit {
namespace {

// Kept key tiles among tiles [first, last) of the query tile `tile` (its kv range is ignored):
// a stretch one evaluation finds empty counts 0, full counts its length, mixed is halved down to
// single tiles (a partial tile is walked, hence counted). `budget` is what may still be counted
// before the caller stops caring; the count may exceed it by one stretch.
std::int64_t count_kept(const expr::Expression& mask, const VariantArgs& args, TileBounds tile,
                        int tile_kv, int first, int last, std::int64_t budget) {
  tile.kv_begin = static_cast<int>(std::int64_t{first} * tile_kv);  // below kv_len
  tile.kv_end = static_cast<int>(std::min<std::int64_t>(std::int64_t{last} * tile_kv, tile.kv_len));
  const TileClass found = expr::classify_tile(mask, args, tile);
  if (found == kTileEmpty) return 0;
  if (found == kTileFull || last - first == 1) return last - first;
  const int middle = first + (last - first) / 2;
  const std::int64_t left = count_kept(mask, args, tile, tile_kv, first, middle, budget);
  if (left > budget) return left;
  return left + count_kept(mask, args, tile, tile_kv, middle, last, budget - left);
}

}  // namespace

KeptTileSample sample_kept_tiles(const expr::Expression& mask, const VariantArgs& args,
                                 const AttentionShape& shape, int tile_q, int tile_kv,
                                 int samples, std::int64_t limit) {
  if (mask.reads_tensors()) {
    throw_error(Status::internal, "the short-rows rule classifies only index-only masks");
  }
  const std::int64_t q_tiles = ceil_div<std::int64_t>(shape.q_len, tile_q);
  const std::int64_t kv_tiles = ceil_div<std::int64_t>(shape.kv_len, tile_kv);
  const std::int64_t heads = std::int64_t{shape.batch} * shape.num_heads_q;
  KeptTileSample sample;
  if (kv_tiles == 0) return sample;
  sample.query_tiles = static_cast<int>(std::min<std::int64_t>(samples, q_tiles * heads));
  const std::int64_t n = sample.query_tiles;
  for (std::int64_t i = 0; i < n && !sample.stopped; ++i) {
    // Note: the i-th of n evenly spaced query tiles (their middles) and heads, so that a
    // window's ramp at the first rows and a mask that varies per head both weigh in.
    const std::int64_t q_tile = (2 * i + 1) * q_tiles / (2 * n);
    const std::int64_t head = i * heads / n;
    const std::int64_t q_begin = q_tile * tile_q;
    const TileBounds tile{static_cast<int>(head / shape.num_heads_q),
                          static_cast<int>(head % shape.num_heads_q),
                          static_cast<int>(q_begin),
                          static_cast<int>(std::min<std::int64_t>(q_begin + tile_q, shape.q_len)),
                          0,
                          0,
                          shape.q_len,
                          shape.kv_len,
                          shape.num_heads_q};
    sample.kept += count_kept(mask, args, tile, tile_kv, 0, static_cast<int>(kv_tiles),
                              limit - sample.kept);
    sample.stopped = sample.kept > limit;
  }
  return sample;
}

ShortRowsVerdict ShortRowsRule::decide(const expr::Expression& mask, const VariantArgs& args,
                                       const AttentionShape& shape,
                                       const codegen::KernelConfig& standard,
                                       int multiprocessors) {
  ShortRowsVerdict verdict;
  verdict.blocks = ceil_div<std::int64_t>(shape.q_len, standard.block_m) * shape.batch *
                   shape.num_heads_q;
  if (verdict.blocks < std::int64_t{kShortRowMinBlocksPerSm} * multiprocessors) return verdict;
  std::array<int, kMaxParams> scalars{};
  std::copy(std::begin(args.scalars), std::end(args.scalars), scalars.begin());
  const auto same = [&](const Decision& d) {
    return d.used && d.shape.batch == shape.batch && d.shape.num_heads_q == shape.num_heads_q &&
           d.shape.num_heads_kv == shape.num_heads_kv && d.shape.q_len == shape.q_len &&
           d.shape.kv_len == shape.kv_len && d.scalars == scalars;
  };
  {
    std::lock_guard lock(mutex_);
    for (const Decision& d : recent_) {
      if (same(d)) return d.verdict;
    }
  }
  // Note: outside the lock; two threads deciding the same call both store the same answer.
  constexpr std::int64_t kLimit = std::int64_t{kShortRowMaxTiles} * kShortRowSamples;
  verdict.sampled = true;
  verdict.sample = sample_kept_tiles(mask, args, shape, standard.block_m, standard.block_n,
                                     kShortRowSamples, kLimit);
  verdict.short_rows =
      !verdict.sample.stopped &&
      verdict.sample.kept <= std::int64_t{kShortRowMaxTiles} * verdict.sample.query_tiles;
  log().debug("{}: {}", verdict.short_rows ? "the two-blocks-per-SM kernel" : "the standard kernel",
              describe(verdict, multiprocessors));
  std::lock_guard lock(mutex_);
  Decision& slot = recent_[next_];
  next_ = (next_ + 1) % recent_.size();
  slot = {shape, scalars, verdict, true};
  return verdict;
}

std::string describe(const ShortRowsVerdict& verdict, int multiprocessors) {
  if (!verdict.sampled) {
    return fmt::format("too few blocks for two per SM ({} blocks on {} SMs, fewer than {} per SM)",
                       verdict.blocks, multiprocessors, kShortRowMinBlocksPerSm);
  }
  return fmt::format("{} rows ({}{} kept key tiles in {} sampled query tiles; short: at most {} a "
                     "tile)",
                     verdict.short_rows ? "short" : "long", verdict.sample.stopped ? "over " : "",
                     verdict.sample.kept, verdict.sample.query_tiles, kShortRowMaxTiles);
}

}  // namespace attnjit
