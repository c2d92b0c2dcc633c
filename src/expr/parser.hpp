// Pratt parser (after wren's compiler): source text to an untyped AST. Reports syntax errors
// with spans and goes on; after an error it stays quiet until it resynchronises on a closing
// bracket or comma, so one mistake gives one message.
#pragma once

#include <string_view>

#include "expr/ast.hpp"
#include "expr/diagnostics.hpp"

namespace attnjit::expr {

constexpr int kMaxSourceLength = 4096;
// Brackets, calls, indices, conditionals and unary operators nested in one another: bounds the
// parser's own recursion.
constexpr int kMaxNestingDepth = 64;
// Operations nested in one another in the tree, where each operator of a flat chain such as
// `a + b + c` is one level: bounds every recursive walk of the tree (type checking, folding,
// printing, lowering) so that they fit a small thread stack.
constexpr int kMaxTreeDepth = 256;

// Never returns null; the tree may hold `error` nodes where syntax errors were reported. A tree
// deeper than kMaxTreeDepth is reported and replaced by an error node.
NodePtr parse(std::string_view source, Diagnostics& diagnostics);

}  // namespace attnjit::expr
