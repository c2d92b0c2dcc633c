// The language's fixed names: built-in variables, functions and their spellings.
#pragma once

#include <optional>
#include <string_view>

#include "expr/ast.hpp"

namespace attnjit::expr {

struct BuiltinInfo {
  std::string_view name;
  Builtin builtin;
};
struct FunctionInfo {
  std::string_view name;
  Function function;
  int arity;
};

// In declaration order (b, h, q_idx, kv_idx, q_len, kv_len, num_heads, score).
const BuiltinInfo* builtins_begin();
const BuiltinInfo* builtins_end();
const FunctionInfo* functions_begin();
const FunctionInfo* functions_end();

std::optional<Builtin> find_builtin(std::string_view name);
const FunctionInfo* find_function(std::string_view name);
std::string_view builtin_name(Builtin builtin);
std::string_view function_name(Function function);  // as the user spells it: "int", "float"
int function_arity(Function function);
std::string_view binary_spelling(BinaryOp op);  // "+", "&&", ...
std::string_view unary_spelling(UnaryOp op);    // "-", "!", "~"

// Literal keywords: true, false, inf.
bool is_literal_keyword(std::string_view name);

// Names a declaration may not take because the generated C++/CUDA uses or reserves them.
bool is_reserved_identifier(std::string_view name);

}  // namespace attnjit::expr
