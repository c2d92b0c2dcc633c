// How much of the attention matrix a mask keeps, tile by tile, from the host block analysis:
// the skipped fraction the kernels will see, and the exact number of kept pairs (for FLOP
// counts that do not flatter sparse masks); and the class of every tile of one (batch, head),
// the mask's block sparsity as a picture. Behind attnjit_variant_tile_census and
// attnjit_variant_tile_map.
#pragma once

#include <cstdint>
#include <vector>

#include "attnjit/tile.cuh"
#include "attnjit/variant_args.cuh"
#include "common/attention_problem.hpp"
#include "expr/expression.hpp"

namespace attnjit::reference {

struct TileCensus {
  std::int64_t tiles = 0, empty = 0, full = 0, partial = 0;
  std::int64_t kept_pairs = 0, total_pairs = 0;
  double skipped_fraction() const { return tiles ? double(empty) / double(tiles) : 0.0; }
  double kept_fraction() const {
    return total_pairs ? double(kept_pairs) / double(total_pairs) : 0.0;
  }
};

// `args` holds host tensors; summaries are built here. Partial tiles are evaluated element by
// element, so the cost is O(tiles + elements of partial tiles).
TileCensus count_tiles(const expr::Expression& mask, const VariantArgs& args,
                       const AttentionShape& shape, int tile_q, int tile_kv);

// The class the kernel's tile classification gives every tile of (batch, head), row-major:
// ceil(q_len / tile_q) rows of ceil(kv_len / tile_kv). Throws Error(invalid_argument) for a
// batch or head out of range.
std::vector<TileClass> tile_map(const expr::Expression& mask, const VariantArgs& args,
                                const AttentionShape& shape, int tile_q, int tile_kv, int batch,
                                int head);

}  // namespace attnjit::reference
