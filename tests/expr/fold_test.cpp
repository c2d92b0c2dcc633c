// Constant folding (src/expr/fold.cpp) uses the runtime's integer semantics.
#include <catch2/catch.hpp>

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
