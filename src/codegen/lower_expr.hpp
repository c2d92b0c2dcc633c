// Lowering of a typed expression to readable CUDA (and host-compilable) C++ statements.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "expr/expression.hpp"

namespace attnjit::expr {
struct Node;
}

namespace attnjit::codegen {

// Sub-expressions computed elsewhere (hoisted out of the element loop): node -> C++ name.
using HoistedNames = std::map<const expr::Node*, std::string>;

struct ElementOptions {
  // Hardware approximations (tanh.approx, ex2.approx, lg2.approx) for the transcendental
  // functions; for scores, whose errors stay inside bf16/fp16 tolerances. Masks are boolean
  // decisions and always use the precise functions, like the block analysis and the CPU reference.
  bool fast_math = false;
  const HoistedNames* hoisted = nullptr;
};

// Bodies of device functions, deterministic text. In scope when the body runs:
//   const attnjit::VariantArgs& args;
//   int b, h, q_idx, kv_idx, q_len, kv_len, num_heads;   (element functions)
//   float score;                                         (score function only)
//   const attnjit::TileBounds& tile;                     (classify function)
// The body declares the user's parameters and tensors as named locals, e.g.
//   const int W = args.scalars[0];
// and ends with `return ...;` (bool for the mask, float for the score, TileClass for classify).
// With `options.hoisted`, the element body of codegen/lower_hooks.hpp, which also has
//   const Block& block_values; const Row& row_values; const Col& col_values;
// in scope.
std::string lower_element_body(const expr::Expression& expression,
                               const ElementOptions& options = {});
std::string lower_classify_body(const expr::Expression& mask);

// One sub-expression as a C++ expression (no enclosing parentheses).
std::string lower_element(const expr::Node& node, const expr::Signature& signature,
                          const ElementOptions& options);
// Declarations of the parameters and tensors that `roots` read outside their hoisted
// sub-expressions (a root is read whole, even when it is itself in `hoisted`).
std::string declare_element_inputs(const expr::Signature& signature,
                                   const std::vector<const expr::Node*>& roots,
                                   const HoistedNames* hoisted);

}  // namespace attnjit::codegen
