// The canonical form (src/expr/print.cpp) re-parses to the same expression: a property test over
// expressions drawn from the operator table itself, so that every operator and function appears,
// with the constants that are hard to print (nan, inf, -0.0, the extremes of int and float,
// subnormals, random bit patterns).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "expr/ast.hpp"
#include "expr/operators.hpp"
#include "expr/print.hpp"
#include "expr/random_expr.hpp"
#include "expr/test_support.hpp"

using namespace attnjit;
using expr::OperandRule;
using expr::ValueType;

namespace {

// Random typed expressions whose operators come from expr/operators.def.
class TableExpr {
 public:
  explicit TableExpr(std::uint32_t seed, bool allow_score) : rng_(seed), allow_score_(allow_score) {}

  std::string of(ValueType type, int depth) {
    if (depth <= 0 || pick(5) == 0) return leaf(type);
    switch (pick(6)) {
      case 0: return unary(type, depth);
      case 1: return function(type, depth);
      case 2: return fmt::format("({} ? {} : {})", of(ValueType::boolean, depth - 1),
                                 of(type, depth - 1), of(type, depth - 1));
      case 3: return conversion(type, depth);
      default: return binary(type, depth);
    }
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  // An operand type the rule admits and that gives `result`, if any.
  static std::vector<ValueType> operands_for(OperandRule rule, ValueType result) {
    std::vector<ValueType> out;
    for (const ValueType operand : {ValueType::integer, ValueType::floating, ValueType::boolean}) {
      if (!expr::accepts(rule, operand)) continue;
      const bool gives_bool = rule == OperandRule::ordering || rule == OperandRule::equality ||
                              rule == OperandRule::logical;
      const ValueType gives = gives_bool ? ValueType::boolean
                              : rule == OperandRule::float_math ? ValueType::floating
                                                                : operand;
      if (gives == result) out.push_back(operand);
    }
    return out;
  }

  std::string unary(ValueType type, int depth) {
    std::vector<std::pair<const expr::UnaryInfo*, ValueType>> choices;
    for (const auto& info : expr::unary_operators()) {
      for (const ValueType operand : operands_for(info.rule, type)) choices.emplace_back(&info, operand);
    }
    if (choices.empty()) return binary(type, depth);
    const auto [info, operand] = choices[static_cast<std::size_t>(pick(static_cast<int>(choices.size())))];
    return fmt::format("{}{}", info->spelling, of(operand, depth - 1));
  }

  std::string binary(ValueType type, int depth) {
    std::vector<std::pair<const expr::BinaryInfo*, ValueType>> choices;
    for (const auto& info : expr::binary_operators()) {
      for (const ValueType operand : operands_for(info.rule, type)) choices.emplace_back(&info, operand);
    }
    const auto [info, operand] = choices[static_cast<std::size_t>(pick(static_cast<int>(choices.size())))];
    // Sometimes an int beside a float, to exercise promotion.
    const ValueType right =
        operand == ValueType::floating && pick(4) == 0 ? ValueType::integer : operand;
    return fmt::format("({} {} {})", of(operand, depth - 1), info->spelling, of(right, depth - 1));
  }

  std::string function(ValueType type, int depth) {
    std::vector<std::pair<const expr::FunctionInfo*, ValueType>> choices;
    for (const auto& info : expr::functions()) {
      for (const ValueType operand : operands_for(info.rule, type)) choices.emplace_back(&info, operand);
    }
    if (type != ValueType::boolean && pick(4) == 0) {  // where(c, a, b)
      return fmt::format("where({}, {}, {})", of(ValueType::boolean, depth - 1), of(type, depth - 1),
                         of(type, depth - 1));
    }
    if (choices.empty()) return binary(type, depth);
    const auto [info, operand] = choices[static_cast<std::size_t>(pick(static_cast<int>(choices.size())))];
    std::vector<std::string> args;
    for (int i = 0; i < info->arity; ++i) {
      // float_math functions take ints too (promoted).
      const ValueType arg = info->rule == OperandRule::float_math && pick(3) == 0 ? ValueType::integer
                                                                                  : operand;
      args.push_back(of(arg, depth - 1));
    }
    return fmt::format("{}({})", info->name, fmt::join(args, ", "));
  }

  std::string conversion(ValueType type, int depth) {
    if (type == ValueType::boolean) return binary(type, depth);
    const ValueType from = static_cast<ValueType>(pick(3));
    return fmt::format("{}({})", type == ValueType::integer ? "int" : "float", of(from, depth - 1));
  }

  std::string leaf(ValueType type) {
    switch (type) {
      case ValueType::boolean: return pick(2) ? "true" : "false";
      case ValueType::integer: {
        static const char* kInts[] = {"q_idx", "kv_idx", "b", "h", "q_len", "kv_len", "num_heads",
                                      "W", "P", "doc[q_idx]", "tab[h, kv_idx]", "0", "7",
                                      "2147483647", "-2147483648", "-1"};
        if (pick(4) == 0) return std::to_string(static_cast<std::int32_t>(rng_()));
        return kInts[pick(16)];
      }
      case ValueType::floating: {
        static const char* kFloats[] = {"nan", "inf", "-inf", "0.0", "-0.0", "1e-45", "-1e-45",
                                        "1.17549435e-38", "3.4028235e38", "-3.4028235e38", "0.1",
                                        "16777217.0", "2.5e10", "cap", "bias[q_idx, kv_idx]"};
        if (allow_score_ && pick(6) == 0) return "score";
        if (pick(3) == 0) return random_float();
        return kFloats[pick(15)];
      }
    }
    return "0";
  }

  // Any finite float, spelled exactly (shortest round-trip form).
  std::string random_float() {
    const std::uint32_t bits = static_cast<std::uint32_t>(rng_());
    float value;
    std::memcpy(&value, &bits, sizeof value);
    if (!std::isfinite(value)) return "1.5";
    std::string text = fmt::format("{}", value);
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    return text;
  }

  std::mt19937 rng_;
  bool allow_score_;
};

// Same shape, kinds, operators, types and values; NaNs are equal to NaNs. Spans may differ.
bool same_tree(const expr::Node& a, const expr::Node& b) {
  if (a.kind != b.kind || a.type != b.type || a.op != b.op || a.children.size() != b.children.size()) {
    return false;
  }
  if (a.kind == expr::NodeKind::constant) {
    if (a.type == ValueType::floating) {
      if (std::isnan(a.float_value) || std::isnan(b.float_value)) {
        if (std::isnan(a.float_value) != std::isnan(b.float_value)) return false;
      } else if (std::memcmp(&a.float_value, &b.float_value, sizeof(float)) != 0) {
        return false;
      }
    } else if (a.int_value != b.int_value) {
      return false;
    }
  }
  for (std::size_t i = 0; i < a.children.size(); ++i) {
    if (!same_tree(a.child(i), b.child(i))) return false;
  }
  return true;
}

void check_round_trip(expr::ExprKind kind, const std::string& source) {
  const expr::Signature signature = test::random_signature();
  INFO("source: " << source);
  const expr::Expression first = expr::parse_expression(kind, source, signature);
  const std::string canonical = first.canonical();
  INFO("canonical: " << canonical);
  const expr::Expression again = expr::parse_expression(kind, canonical, signature);
  CHECK(again.canonical() == canonical);
  CHECK(same_tree(first.root(), again.root()));
}

}  // namespace

TEST_CASE("hard constants print in a form that reads back") {
  for (const char* source :
       {"score + nan", "score + 0.0 / 0.0", "score + inf", "score - inf", "score * -0.0",
        "score + 1e-45", "score + 3.4028235e38", "score + -3.4028235e38", "score + 1.17549435e-38",
        "score + 0.1", "score + 16777217.0", "float(q_idx - -2147483648)", "score + log(-1.0)",
        "score * (0.0 * -1.0)", "score + float(2147483647)"}) {
    check_round_trip(expr::ExprKind::score, source);
  }
}

TEST_CASE("every canonical form re-parses to the same expression") {
  int checked = 0;
  for (std::uint32_t seed = 0; seed < 4000; ++seed) {
    const bool is_mask = seed % 2 == 0;
    TableExpr generator(seed, !is_mask);
    const std::string source =
        generator.of(is_mask ? ValueType::boolean : ValueType::floating, 1 + static_cast<int>(seed % 5));
    if (source.size() > 4096) continue;
    check_round_trip(is_mask ? expr::ExprKind::mask : expr::ExprKind::score, source);
    ++checked;
  }
  CHECK(checked > 3900);
}
