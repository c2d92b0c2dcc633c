// Operator knowledge as data, read from expr/operators.def: spelling, token, precedence, type
// rule, and the names of the element and interval forms that lowering prints.
#pragma once

#include <span>
#include <string_view>

#include "expr/ast.hpp"
#include "expr/lexer.hpp"

namespace attnjit::expr {

// Binding power, loosest first.
enum class Precedence {
  none,
  conditional,  // ?: (right-associative)
  logical_or,   // ||
  logical_and,  // &&
  bit_or,       // |
  bit_xor,      // ^
  bit_and,      // &
  equality,     // == !=
  comparison,   // < <= > >=
  shift,        // << >>
  term,         // + -
  factor,       // * / %
  unary,        // - ! ~
  postfix,      // f(...) t[...]
};

// Which operand types an operator or function takes, and the type of its result.
enum class OperandRule {
  arithmetic,  // ints or floats (an int beside a float is promoted); result of the operands' type
  ordering,    // ints or floats, promoted alike; bool result
  equality,    // two numbers, promoted alike, or two bools; bool result
  logical,     // bools; bool result
  integer,     // ints; int result
  keeps_int,   // all ints give an int; otherwise every argument is promoted to float
  float_math,  // every argument promoted to float; float result
  select,      // where(bool, a, b): the conditional
  convert,     // int(x), float(x): from any type to the function's
};

// Operand types a rule admits once promotions are made (the type checker inserts them).
constexpr bool accepts(OperandRule rule, ValueType operand) {
  switch (rule) {
    case OperandRule::arithmetic:
    case OperandRule::ordering:
    case OperandRule::keeps_int: return operand != ValueType::boolean;
    case OperandRule::equality: return true;
    case OperandRule::logical: return operand == ValueType::boolean;
    case OperandRule::integer: return operand == ValueType::integer;
    case OperandRule::float_math: return operand == ValueType::floating;
    case OperandRule::select:
    case OperandRule::convert: return false;  // not evaluated as operators
  }
  return false;
}

// How generated code writes an operation.
struct Form {
  enum class Kind {
    none,    // not defined for these operands
    infix,   // the C operator: `a OP b`, `OP a`
    call,    // attnjit::ops::name(a, ...)
    select,  // a conversion from bool: `(a ? 1 : 0)` in the target type
  };
  Kind kind = Kind::none;
  std::string_view name;  // for calls
};

struct UnaryInfo {
  UnaryOp op;
  TokenKind token;
  std::string_view spelling;
  OperandRule rule;
  Form int_form, float_form, interval_form, tri_form;
};

struct BinaryInfo {
  BinaryOp op;
  TokenKind token;
  std::string_view spelling;
  Precedence precedence;
  OperandRule rule;
  Form int_form, float_form, interval_form, tri_form;
  Form score_form;  // float operands in a score expression (fast math)
};

struct FunctionInfo {
  Function function;
  std::string_view name;  // as the user spells it: "int", "float"
  int arity;
  OperandRule rule;
  Form int_form, float_form, interval_form;
  Form score_form;  // float operands in a score expression (fast math)
};

struct ConversionInfo {
  ValueType from, to;
  Form element_form, interval_form;
};

std::span<const UnaryInfo> unary_operators();
std::span<const BinaryInfo> binary_operators();
std::span<const FunctionInfo> functions();

const UnaryInfo& unary_info(UnaryOp op);
const BinaryInfo& binary_info(BinaryOp op);
const FunctionInfo& function_info(Function function);
const FunctionInfo* find_function(std::string_view name);
// Null for a conversion to the same type (the identity).
const ConversionInfo* find_conversion(ValueType from, ValueType to);

// The form for operands of `operand` type: element code (bools are always infix) and interval
// code (bools take the tri form).
template <class Info>
Form element_form(const Info& info, ValueType operand) {
  if (operand == ValueType::boolean) return Form{Form::Kind::infix, {}};
  return operand == ValueType::integer ? info.int_form : info.float_form;
}
// The element form inside a score expression, where the table's fast forms are allowed.
template <class Info>
Form score_element_form(const Info& info, ValueType operand) {
  return operand == ValueType::floating ? info.score_form : element_form(info, operand);
}
template <class Info>
Form interval_form(const Info& info, ValueType operand) {
  return operand == ValueType::boolean ? info.tri_form : info.interval_form;
}

}  // namespace attnjit::expr
