#include "expr/names.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <string_view>

namespace attnjit::expr {
namespace {

constexpr std::array<BuiltinInfo, 8> kBuiltins = {{
    {"b", Builtin::b},
    {"h", Builtin::h},
    {"q_idx", Builtin::q_idx},
    {"kv_idx", Builtin::kv_idx},
    {"q_len", Builtin::q_len},
    {"kv_len", Builtin::kv_len},
    {"num_heads", Builtin::num_heads},
    {"score", Builtin::score},
}};

// C++20 keywords and alternative tokens, CUDA built-in variables, names the generated code
// uses, and common macros of the C and CUDA headers a host build may include.
constexpr std::string_view kReserved[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "atomic_cancel", "atomic_commit",
    "atomic_noexcept", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char",
    "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval",
    "constexpr", "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield",
    "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit",
    "export", "extern", "false", "final", "float", "for", "friend", "goto", "if", "import", "inline",
    "int", "long", "module", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
    "operator", "or", "or_eq", "override", "private", "protected", "public", "reflexpr", "register",
    "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
    "static_assert", "static_cast", "struct", "switch", "synchronized", "template", "this",
    "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned",
    "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
    // CUDA
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "half", "nv_bfloat16",
    // generated code
    "args", "tile", "attnjit", "std", "ops", "inf", "main", "Block", "Row", "Col", "block_values",
    "row_values", "col_values",
    // macros
    "NULL", "EOF", "INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF", "INT_MIN", "INT_MAX", "errno",
    "assert", "offsetof", "isnan", "isinf", "isfinite", "signbit", "fpclassify",
};

// CUDA vector types: char1..4, uchar1..4, short, ushort, int, uint, long, ulong, longlong,
// ulonglong, float, double (1..4).
bool is_vector_type(std::string_view name) {
  if (name.empty() || name.back() < '1' || name.back() > '4') return false;
  const std::string_view base = name.substr(0, name.size() - 1);
  constexpr std::string_view kBases[] = {"char", "uchar", "short", "ushort", "int", "uint",
                                         "long", "ulong", "longlong", "ulonglong", "float", "double"};
  return std::find(std::begin(kBases), std::end(kBases), base) != std::end(kBases);
}

}  // namespace

const BuiltinInfo* builtins_begin() { return kBuiltins.data(); }
const BuiltinInfo* builtins_end() { return kBuiltins.data() + kBuiltins.size(); }
std::optional<Builtin> find_builtin(std::string_view name) {
  for (const BuiltinInfo& info : kBuiltins) {
    if (info.name == name) return info.builtin;
  }
  return std::nullopt;
}

std::string_view builtin_name(Builtin builtin) {
  return kBuiltins[static_cast<std::size_t>(builtin)].name;
}

bool is_literal_keyword(std::string_view name) {
  return name == "true" || name == "false" || name == "inf" || name == "nan";
}

bool is_reserved_identifier(std::string_view name) {
  if (name.empty() || name.front() == '_' || name.find("__") != std::string_view::npos) return true;
  if (name.starts_with("ATTNJIT") || name.starts_with("CUDA") || name.starts_with("NVRTC")) {
    return true;
  }
  if (std::find(std::begin(kReserved), std::end(kReserved), name) != std::end(kReserved)) {
    return true;
  }
  return is_vector_type(name);
}

}  // namespace attnjit::expr
