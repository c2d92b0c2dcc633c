// Printing of checked ASTs and constants: the canonical form and C++ literals.
#pragma once

#include <string>

#include "expr/ast.hpp"

namespace attnjit::expr {

// Shortest round-trip spelling that reads back as a float: "2.5", "5.0", "1e-07", "inf", "nan".
std::string format_float(float value);

// Fully parenthesised, deterministic; re-parses to the same tree (NaN constants, whatever their
// bits, print as the literal `nan`).
std::string print_canonical(const Node& node, const Signature& signature);

}  // namespace attnjit::expr
