// Pratt parser (after wren's compiler): source text to an untyped AST. Reports syntax errors
// with spans and goes on; after an error it stays quiet until it resynchronises on a closing
// bracket or comma, so one mistake gives one message.
#pragma once

#include <string_view>

#include "expr/ast.hpp"
#include "expr/diagnostics.hpp"

namespace attnjit::expr {

constexpr int kMaxSourceLength = 4096;
constexpr int kMaxNestingDepth = 64;

// Never returns null; the tree may hold `error` nodes where syntax errors were reported.
NodePtr parse(std::string_view source, Diagnostics& diagnostics);

}  // namespace attnjit::expr
