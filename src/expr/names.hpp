// The language's fixed names: built-in variables, literal keywords and reserved identifiers.
// Operators and functions are in expr/operators.hpp.
#pragma once

#include <optional>
#include <string_view>

#include "expr/ast.hpp"

namespace attnjit::expr {

struct BuiltinInfo {
  std::string_view name;
  Builtin builtin;
};

// In declaration order (b, h, q_idx, kv_idx, q_len, kv_len, num_heads, score).
const BuiltinInfo* builtins_begin();
const BuiltinInfo* builtins_end();

std::optional<Builtin> find_builtin(std::string_view name);
std::string_view builtin_name(Builtin builtin);

// Literal keywords: true, false, inf, nan.
bool is_literal_keyword(std::string_view name);

// Names a declaration may not take because the generated C++/CUDA uses or reserves them.
bool is_reserved_identifier(std::string_view name);

}  // namespace attnjit::expr
