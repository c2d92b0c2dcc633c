#include "expr/operators.hpp"

#include <array>
#include <stdexcept>

namespace attnjit::expr {
namespace {

// A form column of the table as data: `none`, `infix`, `select` or a function name.
constexpr Form form(std::string_view column) {
  if (column == "none") return {Form::Kind::none, {}};
  if (column == "infix") return {Form::Kind::infix, {}};
  if (column == "select") return {Form::Kind::select, {}};
  return {Form::Kind::call, column};
}

// The SCORE_FORM column: `same` is the float form.
constexpr Form score_form(std::string_view column, std::string_view float_column) {
  return form(column == "same" ? float_column : column);
}

constexpr UnaryInfo kUnary[] = {
#define ATTNJIT_UNARY(ID, TOKEN, OP, RULE, INT_FORM, FLOAT_FORM, IV_FORM, TRI_FORM)                \
  {UnaryOp::ID,       TokenKind::TOKEN,  #OP,          OperandRule::RULE,                         \
   form(#INT_FORM),   form(#FLOAT_FORM), form(#IV_FORM), form(#TRI_FORM)},
#include "expr/operators.def"
};

constexpr BinaryInfo kBinary[] = {
#define ATTNJIT_BINARY(ID, TOKEN, OP, PRECEDENCE, RULE, INT_FORM, FLOAT_FORM, IV_FORM, TRI_FORM,   \
                       SCORE_FORM)                                                              \
  {BinaryOp::ID,      TokenKind::TOKEN,  #OP,            Precedence::PRECEDENCE, OperandRule::RULE, \
   form(#INT_FORM),   form(#FLOAT_FORM), form(#IV_FORM), form(#TRI_FORM),                           \
   score_form(#SCORE_FORM, #FLOAT_FORM)},
#include "expr/operators.def"
};

constexpr FunctionInfo kFunctions[] = {
#define ATTNJIT_FUNCTION(ID, SPELLING, ARITY, RULE, INT_FORM, FLOAT_FORM, IV_FORM, SCORE_FORM, \
                         MUFU)                                                                   \
  {Function::ID,    SPELLING,          ARITY,          OperandRule::RULE,                        \
   form(#INT_FORM), form(#FLOAT_FORM), form(#IV_FORM), score_form(#SCORE_FORM, #FLOAT_FORM)},
#include "expr/operators.def"
};

constexpr ConversionInfo kConversions[] = {
#define ATTNJIT_CONVERSION(FROM, TO, ELEMENT_FORM, IV_FORM) \
  {ValueType::FROM, ValueType::TO, form(#ELEMENT_FORM), form(#IV_FORM)},
#include "expr/operators.def"
};

// Note: the enums are generated from the same rows, so row i describes enumerator i.
template <class Info, class Enum>
constexpr bool rows_in_enum_order(const Info* rows, std::size_t count, Enum Info::*id) {
  for (std::size_t i = 0; i < count; ++i) {
    if (static_cast<std::size_t>(rows[i].*id) != i) return false;
  }
  return true;
}
static_assert(rows_in_enum_order(kUnary, std::size(kUnary), &UnaryInfo::op));
static_assert(rows_in_enum_order(kBinary, std::size(kBinary), &BinaryInfo::op));
static_assert(rows_in_enum_order(kFunctions, std::size(kFunctions), &FunctionInfo::function));

}  // namespace

std::span<const UnaryInfo> unary_operators() { return kUnary; }
std::span<const BinaryInfo> binary_operators() { return kBinary; }
std::span<const FunctionInfo> functions() { return kFunctions; }

const UnaryInfo& unary_info(UnaryOp op) { return kUnary[static_cast<std::size_t>(op)]; }
const BinaryInfo& binary_info(BinaryOp op) { return kBinary[static_cast<std::size_t>(op)]; }
const FunctionInfo& function_info(Function function) {
  return kFunctions[static_cast<std::size_t>(function)];
}

const FunctionInfo* find_function(std::string_view name) {
  for (const FunctionInfo& info : kFunctions) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

const ConversionInfo* find_conversion(ValueType from, ValueType to) {
  if (from == to) return nullptr;
  for (const ConversionInfo& info : kConversions) {
    if (info.from == from && info.to == to) return &info;
  }
  throw std::logic_error("find_conversion: no conversion between these types");
}

}  // namespace attnjit::expr
