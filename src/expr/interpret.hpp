// The scalar domain of the evaluator (expr/evaluator.hpp): a Program run on one element, with the
// semantics of attnjit/expr_ops.cuh.
#pragma once

#include "attnjit/variant_args.cuh"
#include "expr/program.hpp"

namespace attnjit::expr {

// Values of the built-ins, indexed by Builtin.
struct Frame {
  Value builtins[8];
};

// `args` may be null for programs without parameters or tensor reads (constant folding).
Value run_program(const Program& program, const VariantArgs* args, const Frame& frame);

}  // namespace attnjit::expr
