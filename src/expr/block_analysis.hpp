// Interval (three-valued) evaluation of a mask over a tile: empty, full or partial. Sound: a
// tile called empty has no kept element and a tile called full has no masked element.
#pragma once

#include <vector>

#include "attnjit/tile.cuh"
#include "attnjit/variant_args.cuh"
#include "expr/expression.hpp"
#include "expr/program.hpp"

namespace attnjit::expr {

// Host version; the lowered device version (codegen/lower_expr) computes the same answer.
// Summaries attached to args.tensors[i].q_summary / kv_summary are used when present.
TileClass classify_tile(const Expression& mask, const VariantArgs& args, const TileBounds& tile);

// The rank-1 int32 tensors the mask reads at exactly q_idx or kv_idx (SummaryRequest,
// expr/program.hpp): computed once, when the expression is built.
const std::vector<SummaryRequest>& summary_requests(const Expression& mask);

// O(length) host computation of a summary; blocks past the tensor's end include 0.
struct HostSummary {
  std::vector<int> min, max;
  int granularity = 0;
  TensorSummary view() const {
    return {min.data(), max.data(), granularity, static_cast<int>(min.size())};
  }
};
HostSummary build_summary(const TensorArg& tensor, int granularity, int index_len);

}  // namespace attnjit::expr
