// CPU evaluation of an expression for one element of the attention matrix. The scalar semantics
// (integer division by zero, shifts, conversions, bounds-checked tensor reads) come from
// kernels_templates/attnjit/expr_ops.cuh, the same code the GPU kernels run.
#pragma once

#include "attnjit/variant_args.cuh"
#include "expr/expression.hpp"

namespace attnjit::expr {

struct ElementIndex {
  int b, h, q_idx, kv_idx, q_len, kv_len, num_heads;
};

// `args` holds host pointers for tensors on the CPU.
bool evaluate_mask(const Expression& mask, const VariantArgs& args, const ElementIndex& at);
float evaluate_score(const Expression& score, const VariantArgs& args, const ElementIndex& at,
                     float raw_score);

}  // namespace attnjit::expr
