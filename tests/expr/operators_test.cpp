// The operator table (src/expr/operators.def): every row reaches the parser and printer through
// its spelling, and the one evaluator (src/expr/evaluator.hpp) runs every row on every operand
// type it admits, in the scalar and the interval domain alike.
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "expr/block_analysis.hpp"
#include "expr/evaluate.hpp"
#include "expr/operators.hpp"
#include "expr/parser.hpp"
#include "expr/print.hpp"
#include "expr/test_support.hpp"

using namespace attnjit;
using expr::OperandRule;
using expr::ValueType;

namespace {

expr::NodePtr parse_untyped(const std::string& source) {
  expr::Diagnostics diagnostics;
  expr::NodePtr root = expr::parse(source, diagnostics);
  INFO(source);
  REQUIRE(diagnostics.empty());
  return root;
}

// Operands of each type that vary over a tile, so that both evaluators see many values.
std::string operand(ValueType type, int i) {
  static const char* kInt[] = {"(q_idx - 7)", "(kv_idx - 5)", "(q_idx + kv_idx)"};
  static const char* kFloat[] = {"(float(q_idx) * 0.75 - 4.0)", "(float(kv_idx) * 0.5 - 1.0)",
                                 "(float(q_idx - kv_idx) * 1.25)"};
  static const char* kBool[] = {"(q_idx > 6)", "(kv_idx > 3)", "(q_idx == kv_idx)"};
  return type == ValueType::integer ? kInt[i] : type == ValueType::floating ? kFloat[i] : kBool[i];
}

// A mask that holds for some elements of a 16 x 16 matrix and not for others.
std::string mask_of(const std::string& value, ValueType result) {
  if (result == ValueType::boolean) return value;
  if (result == ValueType::integer) return fmt::format("{} >= (q_idx - kv_idx)", value);
  return fmt::format("{} >= float(q_idx - kv_idx) * 0.5", value);
}

ValueType result_type(OperandRule rule, ValueType operand) {
  switch (rule) {
    case OperandRule::ordering:
    case OperandRule::equality:
    case OperandRule::logical: return ValueType::boolean;
    case OperandRule::float_math: return ValueType::floating;
    default: return operand;
  }
}

// Brute-force truth of `mask` over `tile` against its interval classification: a tile called full
// or empty must be so (partial is always allowed).
void check_tiles_sound(const expr::Expression& mask) {
  const VariantArgs args{};
  for (const int block : {1, 2, 4, 16}) {
    for (int q0 = 0; q0 < 16; q0 += block) {
      for (int kv0 = 0; kv0 < 16; kv0 += block) {
        const TileBounds tile{0, 0, q0, q0 + block, kv0, kv0 + block, 16, 16, 1};
        bool any_kept = false, any_masked = false;
        for (int q = q0; q < q0 + block; ++q) {
          for (int kv = kv0; kv < kv0 + block; ++kv) {
            const bool kept = expr::evaluate_mask(mask, args, {0, 0, q, kv, 16, 16, 1});
            (kept ? any_kept : any_masked) = true;
          }
        }
        const TileClass found = expr::classify_tile(mask, args, tile);
        INFO("tile q " << q0 << " kv " << kv0 << " block " << block);
        if (found == kTileFull) CHECK_FALSE(any_masked);
        if (found == kTileEmpty) CHECK_FALSE(any_kept);
      }
    }
  }
}

}  // namespace

TEST_CASE("every operator parses from its spelling and prints it back") {
  for (const expr::BinaryInfo& info : expr::binary_operators()) {
    const std::string source = fmt::format("1 {} 2", info.spelling);
    const expr::NodePtr root = parse_untyped(source);
    REQUIRE(root->kind == expr::NodeKind::binary);
    CHECK(root->binary_op() == info.op);
    CHECK(expr::print_canonical(*root, {}) == "(" + source + ")");
  }
  for (const expr::UnaryInfo& info : expr::unary_operators()) {
    const std::string source = fmt::format("{}x", info.spelling);
    const expr::NodePtr root = parse_untyped(source);
    REQUIRE(root->kind == expr::NodeKind::unary);
    CHECK(root->unary_op() == info.op);
  }
  for (const expr::FunctionInfo& info : expr::functions()) {
    REQUIRE(expr::find_function(info.name) == &info);
    CHECK(&expr::function_info(info.function) == &info);
  }
  CHECK(expr::find_function("nope") == nullptr);
}

TEST_CASE("binary operators take their precedence from the table") {
  // `1 A 2 B 3` groups to the right exactly when B binds tighter than A.
  for (const expr::BinaryInfo& a : expr::binary_operators()) {
    for (const expr::BinaryInfo& b : expr::binary_operators()) {
      const std::string source = fmt::format("1 {} 2 {} 3", a.spelling, b.spelling);
      const expr::NodePtr root = parse_untyped(source);
      const bool right = b.precedence > a.precedence;
      INFO(source);
      CHECK(expr::print_canonical(*root, {}) ==
            (right ? fmt::format("(1 {} (2 {} 3))", a.spelling, b.spelling)
                   : fmt::format("((1 {} 2) {} 3)", a.spelling, b.spelling)));
    }
  }
}

TEST_CASE("both evaluators run every operator on every operand type it admits") {
  int checked = 0;
  const auto check = [&checked](const std::string& value, ValueType result) {
    INFO(value);
    check_tiles_sound(expr::parse_expression(expr::ExprKind::mask, mask_of(value, result), {}));
    ++checked;
  };
  for (const ValueType type : {ValueType::integer, ValueType::floating, ValueType::boolean}) {
    for (const expr::UnaryInfo& info : expr::unary_operators()) {
      if (!expr::accepts(info.rule, type)) continue;
      check(fmt::format("({}{})", info.spelling, operand(type, 0)), result_type(info.rule, type));
    }
    for (const expr::BinaryInfo& info : expr::binary_operators()) {
      if (!expr::accepts(info.rule, type)) continue;
      check(fmt::format("({} {} {})", operand(type, 0), info.spelling, operand(type, 1)),
            result_type(info.rule, type));
    }
    for (const expr::FunctionInfo& info : expr::functions()) {
      if (!expr::accepts(info.rule, type)) continue;
      std::vector<std::string> args;
      for (int i = 0; i < info.arity; ++i) args.push_back(operand(type, i));
      check(fmt::format("{}({})", info.name, fmt::join(args, ", ")), result_type(info.rule, type));
    }
  }
  // int: 2 unary, 16 binary, 4 functions; float: 1, 10, 15; bool: 1, 4, 0.
  CHECK(checked == 22 + 26 + 5);
  // Conversions, from every type.
  for (const ValueType type : {ValueType::integer, ValueType::floating, ValueType::boolean}) {
    check(fmt::format("int({})", operand(type, 2)), ValueType::integer);
    check(fmt::format("float({})", operand(type, 2)), ValueType::floating);
  }
}
