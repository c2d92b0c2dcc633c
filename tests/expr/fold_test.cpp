// Constant folding (src/expr/fold.cpp) uses the runtime's integer semantics.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "expr/operators.hpp"
#include "expr/test_support.hpp"

using attnjit::test::parse_mask;
using attnjit::test::parse_score;

TEST_CASE("constant subexpressions fold with the runtime semantics") {
  auto [source, canonical] = GENERATE(table<const char*, const char*>({
      {"2147483647 + 1 == -2147483648", "true"},
      {"7 / 0 == 0 && 7 % 0 == 0", "true"},
      {"-2147483648 / -1 == -2147483648", "true"},
      {"1 << 33 == 2", "true"},
      {"int(0.0 / 0.0) == 0", "true"},
      {"q_idx < 2 + 3", "(q_idx < 5)"},
      {"true && q_idx < 1", "(q_idx < 1)"},
      {"q_idx < 1 && false", "false"},
      {"q_idx < 1 || true", "true"},
      {"1 > 0 ? q_idx < 1 : kv_idx < 1", "(q_idx < 1)"},
      {"int(q_idx) == q_idx", "(q_idx == q_idx)"},
  }));
  CAPTURE(source);
  CHECK(parse_mask(source).canonical() == canonical);
}

TEST_CASE("constant masks and identity scores are recognised after folding") {
  CHECK(parse_mask("1 < 2").is_constant_true());
  CHECK(parse_mask("q_idx >= 0 || true").is_constant_true());
  CHECK_FALSE(parse_mask("false").is_constant_true());
  CHECK(parse_score("score").is_identity());
  CHECK(parse_score("1 > 0 ? score : 0.0").is_identity());
  CHECK(parse_score("2.0 * 3").canonical() == "6.0");
}

// The kernel choice reads it (codegen::sm90_kernel_config): after folding, and only calls on
// values that vary within a block, since the rest are computed once per block.
TEST_CASE("calls_special_function: the MUFU functions a score calls per element, row or column",
          "[expr][fold]") {
  CHECK_FALSE(parse_score("score").calls_special_function());
  CHECK_FALSE(parse_score("score + cap * (kv_idx - q_idx)").calls_special_function());
  CHECK_FALSE(parse_score("score * exp(0.0)").calls_special_function());
  CHECK_FALSE(parse_score("max(score, floor(cap))").calls_special_function());
  // ALiBi's per-head slope, and a function of a parameter: once per block.
  CHECK_FALSE(parse_score("score + exp2(-8.0 * float(h + 1) / float(num_heads)) * "
                          "float(kv_idx - q_idx)")
                  .calls_special_function());
  CHECK_FALSE(parse_score("score * sigmoid(cap)").calls_special_function());
  CHECK(parse_score("cap * tanh(score / cap)").calls_special_function());
  CHECK(parse_score("score - log(float(1 + abs(q_idx - kv_idx)))").calls_special_function());
  CHECK(parse_score("score + sqrt(float(kv_idx))").calls_special_function());
  CHECK(parse_score("score + exp(bias[q_idx, h])").calls_special_function());
  CHECK(parse_score("score + exp2(float(doc[kv_idx]))").calls_special_function());
  CHECK(parse_mask("sqrt(float(q_idx)) > 3.0").calls_special_function());
}

// Every function of expr/operators.def, called per element: its MUFU column decides.
TEST_CASE("calls_special_function: every function of the table, by its MUFU column",
          "[expr][fold]") {
  const std::map<std::string, std::pair<std::string, bool>> calls = {
      {"abs", {"abs(score)", false}},
      {"min", {"min(score, 1.0)", false}},
      {"max", {"max(score, 1.0)", false}},
      {"clamp", {"clamp(score, 0.0, 1.0)", false}},
      {"exp", {"exp(score)", true}},
      {"exp2", {"exp2(score)", true}},
      {"log", {"log(score)", true}},
      {"log2", {"log2(score)", true}},
      {"sqrt", {"sqrt(score)", true}},
      {"rsqrt", {"rsqrt(score)", true}},
      {"tanh", {"tanh(score)", true}},
      {"sigmoid", {"sigmoid(score)", true}},
      {"floor", {"floor(score)", false}},
      {"ceil", {"ceil(score)", false}},
      {"pow", {"pow(score, 2.0)", true}},
      {"where", {"where(score > 0.0, score, 0.0)", false}},
      {"int", {"float(int(score))", false}},
      {"float", {"float(q_idx) * score", false}},
  };
  for (const attnjit::expr::FunctionInfo& function : attnjit::expr::functions()) {
    const std::string name(function.name);
    INFO(name);
    const auto found = calls.find(name);
    REQUIRE(found != calls.end());  // a new function needs its row here
    CHECK(parse_score(found->second.first).calls_special_function() == found->second.second);
  }
}
