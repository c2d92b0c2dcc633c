// Constant folding with the runtime's own semantics (the folded value is computed by the same
// interpreter as the CPU evaluator), plus a few identities that need no value: a constant
// condition picks its branch, `true && x` is x, `false && x` is false (there are no side
// effects to keep), int(int) and float(float) vanish.
#pragma once

#include "expr/ast.hpp"

namespace attnjit::expr {

// The tree must be type-checked and valid.
void fold_constants(NodePtr& root);

}  // namespace attnjit::expr
