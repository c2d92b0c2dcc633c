#include "runtime/short_rows.hpp"

#include <algorithm>

#include "common/error.hpp"
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

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

KeptTileSample sample_kept_tiles(const expr::Expression& mask, const VariantArgs& args,
                                 const AttentionShape& shape, int tile_q, int tile_kv,
                                 int samples, std::int64_t limit) {
  if (mask.reads_tensors()) {
    throw_error(Status::internal, "the short-rows rule classifies only index-only masks");
  }
  const std::int64_t q_tiles = ceil_div(shape.q_len, tile_q);
  const std::int64_t kv_tiles = ceil_div(shape.kv_len, tile_kv);
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

bool ShortRowsRule::applies(const expr::Expression& mask, const VariantArgs& args,
                            const AttentionShape& shape, const codegen::KernelConfig& standard,
                            int multiprocessors) {
  const std::int64_t blocks = ceil_div(shape.q_len, standard.block_m) * shape.batch *
                              shape.num_heads_q;
  if (blocks < std::int64_t{kShortRowMinBlocksPerSm} * multiprocessors) return false;
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
      if (same(d)) return d.short_rows;
    }
  }
  // Note: outside the lock; two threads deciding the same call both store the same answer.
  constexpr std::int64_t kLimit = std::int64_t{kShortRowMaxTiles} * kShortRowSamples;
  const KeptTileSample sample = sample_kept_tiles(mask, args, shape, standard.block_m,
                                                  standard.block_n, kShortRowSamples, kLimit);
  const bool short_rows =
      !sample.stopped && sample.kept <= std::int64_t{kShortRowMaxTiles} * sample.query_tiles;
  log().debug("{}{} kept key tiles in {} sampled query tiles: {}", sample.stopped ? "over " : "",
              sample.kept, sample.query_tiles,
              short_rows ? "short rows, the two-blocks-per-SM kernel" : "the standard kernel");
  std::lock_guard lock(mutex_);
  Decision& slot = recent_[next_];
  next_ = (next_ + 1) % recent_.size();
  slot = {shape, scalars, short_rows, true};
  return short_rows;
}

}  // namespace attnjit
