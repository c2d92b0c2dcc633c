// Name resolution and type checking, in place: syntactic `name`, `call` and `index` nodes become
// builtins, parameters, tensor reads and functions; implicit int -> float promotions become
// explicit `float()` nodes; where() becomes a conditional. Errors are reported once: a subtree
// with an error is marked invalid and its parents stay quiet. When `diagnostics` already holds
// syntax errors, the type of the whole expression is not checked.
#pragma once

#include "expr/ast.hpp"
#include "expr/diagnostics.hpp"
#include "expr/expression.hpp"

namespace attnjit::expr {

void typecheck(NodePtr& root, ExprKind kind, const Signature& signature, Diagnostics& diagnostics);

}  // namespace attnjit::expr
