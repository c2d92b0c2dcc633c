#include "reference/tile_census.hpp"

#include <algorithm>
#include <vector>

#include "expr/block_analysis.hpp"
#include "expr/evaluate.hpp"

namespace attnjit::reference {

TileCensus count_tiles(const expr::Expression& mask, const VariantArgs& args,
                       const AttentionShape& shape, int tile_q, int tile_kv) {
  VariantArgs with_summaries = args;
  std::vector<expr::HostSummary> summaries;
  const auto& requests = expr::summary_requests(mask);
  summaries.reserve(requests.size());
  for (const auto& request : requests) {
    const bool q_axis = request.axis == expr::SummaryAxis::q;
    auto& tensor = with_summaries.tensors[request.tensor];
    summaries.push_back(expr::build_summary(tensor, q_axis ? tile_q : tile_kv,
                                            q_axis ? shape.q_len : shape.kv_len));
    (q_axis ? tensor.q_summary : tensor.kv_summary) = summaries.back().view();
  }
  TileCensus census;
  census.total_pairs = std::int64_t{shape.batch} * shape.num_heads_q * shape.q_len * shape.kv_len;
  for (int b = 0; b < shape.batch; ++b) {
    for (int h = 0; h < shape.num_heads_q; ++h) {
      // Note: tile starts step in 64 bits; q0 + tile_q overflows int when q_len is near INT_MAX.
      for (std::int64_t q_start = 0; q_start < shape.q_len; q_start += tile_q) {
        for (std::int64_t kv_start = 0; kv_start < shape.kv_len; kv_start += tile_kv) {
          const int q0 = static_cast<int>(q_start), k0 = static_cast<int>(kv_start);
          const TileBounds tile{
              b,
              h,
              q0,
              static_cast<int>(std::min<std::int64_t>(q_start + tile_q, shape.q_len)),
              k0,
              static_cast<int>(std::min<std::int64_t>(kv_start + tile_kv, shape.kv_len)),
              shape.q_len,
              shape.kv_len,
              shape.num_heads_q};
          ++census.tiles;
          switch (expr::classify_tile(mask, with_summaries, tile)) {
            case kTileEmpty:
              ++census.empty;
              break;
            case kTileFull:
              ++census.full;
              census.kept_pairs += std::int64_t{tile.q_end - q0} * (tile.kv_end - k0);
              break;
            case kTilePartial:
              ++census.partial;
              for (int i = q0; i < tile.q_end; ++i) {
                for (int j = k0; j < tile.kv_end; ++j) {
                  const expr::ElementIndex at{
                      b, h, i, j, shape.q_len, shape.kv_len, shape.num_heads_q};
                  census.kept_pairs += expr::evaluate_mask(mask, args, at) ? 1 : 0;
                }
              }
              break;
          }
        }
      }
    }
  }
  return census;
}

}  // namespace attnjit::reference
