// Lowering of a typed expression to readable CUDA (and host-compilable) C++ statements.
#pragma once

#include <string>

#include "expr/expression.hpp"

namespace attnjit::codegen {

// Bodies of device functions, deterministic text. In scope when the body runs:
//   const attnjit::VariantArgs& args;
//   int b, h, q_idx, kv_idx, q_len, kv_len, num_heads;   (element functions)
//   float score;                                         (score function only)
//   const attnjit::TileBounds& tile;                     (classify function)
// The body declares the user's parameters and tensors as named locals, e.g.
//   const int W = args.scalars[0];
// and ends with `return ...;` (bool for the mask, float for the score, TileClass for classify).
std::string lower_element_body(const expr::Expression& expression);
std::string lower_classify_body(const expr::Expression& mask);

}  // namespace attnjit::codegen
