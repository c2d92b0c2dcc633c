#include "reference/tile_census.hpp"

#include <algorithm>
#include <vector>

#include "common/error.hpp"
#include "expr/block_analysis.hpp"
#include "expr/evaluate.hpp"

namespace attnjit::reference {
namespace {

// The tiles of one call as the kernel classifies them: the mask's tensor summaries built at the
// tile granularity (they live as long as the walk), then every tile of a (batch, head).
class TileWalk {
 public:
  TileWalk(const expr::Expression& mask, const VariantArgs& args, const AttentionShape& shape,
           int tile_q, int tile_kv)
      : mask_(mask), args_(args), shape_(shape), tile_q_(tile_q), tile_kv_(tile_kv) {
    const auto& requests = expr::summary_requests(mask);
    summaries_.reserve(requests.size());
    for (const auto& request : requests) {
      const bool q_axis = request.axis == expr::SummaryAxis::q;
      auto& tensor = args_.tensors[request.tensor];
      summaries_.push_back(expr::build_summary(tensor, q_axis ? tile_q : tile_kv,
                                               q_axis ? shape.q_len : shape.kv_len));
      (q_axis ? tensor.q_summary : tensor.kv_summary) = summaries_.back().view();
    }
  }
  TileWalk(const TileWalk&) = delete;  // args_ points into summaries_
  TileWalk& operator=(const TileWalk&) = delete;

  // visit(tile, class) for every tile of (b, h), row by row.
  template <typename Visit>
  void for_each_tile(int b, int h, Visit visit) const {
    // Note: tile starts step in 64 bits; q0 + tile_q overflows int when q_len is near INT_MAX.
    for (std::int64_t q_start = 0; q_start < shape_.q_len; q_start += tile_q_) {
      for (std::int64_t kv_start = 0; kv_start < shape_.kv_len; kv_start += tile_kv_) {
        const TileBounds tile{
            b,
            h,
            static_cast<int>(q_start),
            static_cast<int>(std::min<std::int64_t>(q_start + tile_q_, shape_.q_len)),
            static_cast<int>(kv_start),
            static_cast<int>(std::min<std::int64_t>(kv_start + tile_kv_, shape_.kv_len)),
            shape_.q_len,
            shape_.kv_len,
            shape_.num_heads_q};
        visit(tile, expr::classify_tile(mask_, args_, tile));
      }
    }
  }

 private:
  const expr::Expression& mask_;
  VariantArgs args_;  // with the summaries' views
  std::vector<expr::HostSummary> summaries_;
  const AttentionShape& shape_;
  int tile_q_, tile_kv_;
};

}  // namespace

TileCensus count_tiles(const expr::Expression& mask, const VariantArgs& args,
                       const AttentionShape& shape, int tile_q, int tile_kv) {
  const TileWalk walk(mask, args, shape, tile_q, tile_kv);
  TileCensus census;
  census.total_pairs = std::int64_t{shape.batch} * shape.num_heads_q * shape.q_len * shape.kv_len;
  for (int b = 0; b < shape.batch; ++b) {
    for (int h = 0; h < shape.num_heads_q; ++h) {
      walk.for_each_tile(b, h, [&](const TileBounds& tile, TileClass tile_class) {
        ++census.tiles;
        switch (tile_class) {
          case kTileEmpty:
            ++census.empty;
            break;
          case kTileFull:
            ++census.full;
            census.kept_pairs +=
                std::int64_t{tile.q_end - tile.q_begin} * (tile.kv_end - tile.kv_begin);
            break;
          case kTilePartial:
            ++census.partial;
            for (int i = tile.q_begin; i < tile.q_end; ++i) {
              for (int j = tile.kv_begin; j < tile.kv_end; ++j) {
                const expr::ElementIndex at{
                    b, h, i, j, shape.q_len, shape.kv_len, shape.num_heads_q};
                census.kept_pairs += expr::evaluate_mask(mask, args, at) ? 1 : 0;
              }
            }
            break;
        }
      });
    }
  }
  return census;
}

std::vector<TileClass> tile_map(const expr::Expression& mask, const VariantArgs& args,
                                const AttentionShape& shape, int tile_q, int tile_kv, int batch,
                                int head) {
  if (batch < 0 || batch >= shape.batch || head < 0 || head >= shape.num_heads_q) {
    throw_error(Status::invalid_argument,
                "tile map of batch {} head {}: the call has batch 0..{} and query heads 0..{}",
                batch, head, shape.batch - 1, shape.num_heads_q - 1);
  }
  std::vector<TileClass> map;
  TileWalk(mask, args, shape, tile_q, tile_kv)
      .for_each_tile(batch, head, [&](const TileBounds&, TileClass c) { map.push_back(c); });
  return map;
}

}  // namespace attnjit::reference
