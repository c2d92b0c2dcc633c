// Parsing, precedence and syntax errors (tests for src/expr/parser.cpp and lexer.cpp).
#include <catch2/catch.hpp>

#include "expr/parser.hpp"
#include "expr/test_support.hpp"
#include "support/small_stack.hpp"

using attnjit::expr::ExprKind;
using attnjit::test::parse_error;
using attnjit::test::parse_mask;
using attnjit::test::parse_score;

TEST_CASE("the six standard variants parse") {
  SECTION("masks") {
    auto [source, canonical] = GENERATE(table<const char*, const char*>({
        {"q_idx >= kv_idx", "(q_idx >= kv_idx)"},
        {"q_idx >= kv_idx && q_idx - kv_idx < W", "((q_idx >= kv_idx) && ((q_idx - kv_idx) < W))"},
        {"kv_idx < prefix || q_idx >= kv_idx", "((kv_idx < prefix) || (q_idx >= kv_idx))"},
        {"doc[q_idx] == doc[kv_idx]", "(doc[q_idx] == doc[kv_idx])"},
    }));
    CAPTURE(source);
    CHECK(parse_mask(source).canonical() == canonical);
  }
  SECTION("scores") {
    auto [source, canonical] = GENERATE(table<const char*, const char*>({
        {"score + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - q_idx)",
         "(score + (exp2((((-8.0) * float((h + 1))) / float(num_heads))) * float((kv_idx - q_idx))))"},
        {"cap * tanh(score / cap)", "(cap * tanh((score / cap)))"},
    }));
    CAPTURE(source);
    CHECK(parse_score(source).canonical() == canonical);
  }
}

TEST_CASE("operators bind with C precedence") {
  auto [source, canonical] = GENERATE(table<const char*, const char*>({
      {"1 + 2 * q_idx", "(1 + (2 * q_idx))"},
      {"q_idx - kv_idx - 1", "((q_idx - kv_idx) - 1)"},
      {"q_idx / 2 % 3", "((q_idx / 2) % 3)"},
      {"q_idx << 1 + 1", "(q_idx << 2)"},
      {"q_idx & 1 | kv_idx ^ 2", "((q_idx & 1) | (kv_idx ^ 2))"},
      {"-q_idx * 2", "((-q_idx) * 2)"},
      {"~q_idx", "(~q_idx)"},
      {"(q_idx + 1) * 2", "((q_idx + 1) * 2)"},
      {"doc[q_idx + 1] * 2", "(doc[(q_idx + 1)] * 2)"},
  }));
  CAPTURE(source);
  CHECK(parse_score(source).canonical() == fmt::format("float({})", canonical));
}

TEST_CASE("boolean operators bind with C precedence") {
  auto [source, canonical] = GENERATE(table<const char*, const char*>({
      {"q_idx < 1 || kv_idx < 2 && b < 3", "((q_idx < 1) || ((kv_idx < 2) && (b < 3)))"},
      {"!(q_idx < 1) == true", "((!(q_idx < 1)) == true)"},
      {"q_idx < 1 == kv_idx < 2", "((q_idx < 1) == (kv_idx < 2))"},
      {"q_idx < 1 ? kv_idx < 2 : b < 3 ? h < 1 : false",
       "((q_idx < 1) ? (kv_idx < 2) : ((b < 3) ? (h < 1) : false))"},
      {"q_idx < 1 || kv_idx < 2 ? true : b == 0", "(((q_idx < 1) || (kv_idx < 2)) ? true : (b == 0))"},
  }));
  CAPTURE(source);
  CHECK(parse_mask(source).canonical() == canonical);
}

TEST_CASE("literals") {
  auto [source, canonical] = GENERATE(table<const char*, const char*>({
      {"1e-3", "0.001"},
      {"2.5", "2.5"},
      {".5", "0.5"},
      {"3.", "3.0"},
      {"inf", "inf"},
      {"-inf", "(-inf)"},
      {"nan", "nan"},
      {"0.0 / 0.0", "nan"},
      {"-nan", "nan"},
      {"1E+2", "100.0"},
      // Shortest digits that read back as the same float (2^31 here).
      {"-2147483648", "(-2147483600.0)"},
      {"2147483647", "2147483600.0"},
      {"float(-2147483648 < 0)", "1.0"},
  }));
  CAPTURE(source);
  CHECK(parse_score(source).canonical() == canonical);
}

TEST_CASE("the canonical form reparses to itself") {
  for (const char* source : {"q_idx >= kv_idx && q_idx - kv_idx < W", "doc[q_idx] == doc[kv_idx]",
                             "-(q_idx) < -2147483648 || -5 > q_idx", "!(q_idx < 3) != (b > 1)"}) {
    const std::string once = parse_mask(source).canonical();
    CHECK(parse_mask(once).canonical() == once);
  }
}

TEST_CASE("an empty source means the default") {
  CHECK(parse_mask("").is_constant_true());
  CHECK(parse_mask("  ").is_constant_true());
  CHECK(parse_score("").is_identity());
  CHECK_FALSE(parse_mask("q_idx >= kv_idx").is_constant_true());
  CHECK_FALSE(parse_score("score * 2.0").is_identity());
}

TEST_CASE("syntax errors name the column and underline the token") {
  auto [source, message] = GENERATE(table<const char*, const char*>({
      {"q_idx >=",
       "mask: col 9: expected an expression, found end of input\n"
       "  q_idx >=\n"
       "          ^"},
      {"(q_idx >= kv_idx",
       "mask: col 17: expected ')' to close the '(' at col 1, found end of input\n"
       "  (q_idx >= kv_idx\n"
       "                  ^"},
      {"q_idx >= kv_idx )",
       "mask: col 17: expected an operator or end of input, found ')'\n"
       "  q_idx >= kv_idx )\n"
       "                  ^"},
      {"q_idx = kv_idx",
       "mask: col 7: unexpected '=' (did you mean '=='?)\n"
       "  q_idx = kv_idx\n"
       "        ^"},
      {"q_idx $ kv_idx",
       "mask: col 7: unexpected character '$'\n"
       "  q_idx $ kv_idx\n"
       "        ^"},
      {"3x > 1",
       "mask: col 1: malformed number '3x'\n"
       "  3x > 1\n"
       "  ^~"},
      {"2147483648 > q_idx",
       "mask: col 1: integer literal '2147483648' does not fit in int32\n"
       "  2147483648 > q_idx\n"
       "  ^~~~~~~~~~"},
      {"1e39 > 0.0",
       "mask: col 1: float literal '1e39' is out of range for float32\n"
       "  1e39 > 0.0\n"
       "  ^~~~"},
      {"doc[] == 1",
       "mask: col 5: expected an index\n"
       "  doc[] == 1\n"
       "      ^"},
      {"q_idx ? kv_idx",
       "mask: col 15: expected ':' in the conditional expression, found end of input\n"
       "  q_idx ? kv_idx\n"
       "                ^"},
  }));
  CAPTURE(source);
  CHECK(parse_error(ExprKind::mask, source) == message);
}

TEST_CASE("parsing goes on after an error, without cascades") {
  SECTION("two independent syntax errors") {
    CHECK(parse_error(ExprKind::mask, "min(q_idx,) + max(,kv_idx) > 0") ==
          "mask: col 11: expected an expression, found ')'\n"
          "  min(q_idx,) + max(,kv_idx) > 0\n"
          "            ^\n"
          "mask: col 19: expected an expression, found ','\n"
          "  min(q_idx,) + max(,kv_idx) > 0\n"
          "                    ^");
  }
  SECTION("a syntax error and a name error") {
    CHECK(parse_error(ExprKind::mask, "q_idx >= kv_idz && (b + )") ==
          "mask: col 10: unknown name 'kv_idz' (did you mean 'kv_idx'?)\n"
          "  q_idx >= kv_idz && (b + )\n"
          "           ^~~~~~\n"
          "mask: col 25: expected an expression, found ')'\n"
          "  q_idx >= kv_idz && (b + )\n"
          "                          ^");
  }
  SECTION("one bad token gives one message") {
    const std::string message = parse_error(ExprKind::mask, "q_idx >= ((( ] kv_idx");
    CHECK(message.find("\nmask:") == std::string::npos);
  }
}

TEST_CASE("length and nesting limits give clear errors") {
  SECTION("too long") {
    const std::string source = "q_idx >= kv_idx" + std::string(5000, ' ');
    CHECK(parse_error(ExprKind::mask, source) ==
          "mask: col 4097: expression is too long (5015 characters, at most 4096)");
  }
  SECTION("64 levels of parentheses are fine, 65 are not") {
    const std::string ok = std::string(64, '(') + "q_idx" + std::string(64, ')') + " > 0";
    CHECK(parse_error(ExprKind::mask, ok).empty());
    const std::string deep = std::string(65, '(') + "q_idx" + std::string(65, ')') + " > 0";
    CHECK(parse_error(ExprKind::mask, deep).rfind("mask: col 65: expression nests too deeply (more than 64 levels)", 0) == 0);
  }
  SECTION("deep unary chains") {
    const std::string deep = std::string(2000, '!') + "true";
    CHECK(parse_error(ExprKind::mask, deep).find("nests too deeply") != std::string::npos);
  }
  SECTION("a chain is as deep as its operators: 256 levels are fine, 257 are not") {
    // `q_idx + 1 + ... + 1 > 0` with n additions is n + 2 levels deep.
    const auto chain = [](int additions) {
      std::string source = "q_idx";
      for (int i = 0; i < additions; ++i) source += " + 1";
      return source + " > 0";
    };
    CHECK(parse_error(ExprKind::mask, chain(254)).empty());
    CHECK(parse_error(ExprKind::mask, chain(255)).rfind(
              "mask: col 7: expression is too deep: 257 levels of operations, at most 256 (each "
              "operator of a chain like a + b + c is a level; group long chains with parentheses)\n"
              "  q_idx + 1 + 1",
              0) == 0);
  }
  SECTION("grouping a chain with parentheses makes it shallow") {
    std::string half = "1";
    for (int i = 0; i < 200; ++i) half += " + 1";
    CHECK(parse_error(ExprKind::mask, "(" + half + ") + (" + half + ") > 0").empty());
  }
}

TEST_CASE("a 2,040-term chain gets a clear error on a 512 KiB stack") {
  std::string source = "1";
  for (int i = 1; i < 2040; ++i) source += "+1";
  source += " > 0";
  REQUIRE(source.size() <= static_cast<std::size_t>(attnjit::expr::kMaxSourceLength));
  std::string message;
  attnjit::Status status = attnjit::Status::ok;
  attnjit::test::run_on_stack(512 * 1024, [&] {
    try {
      attnjit::expr::parse_expression(ExprKind::mask, source, {});
    } catch (const attnjit::Error& error) {
      status = error.status();
      message = error.what();
    }
  });
  CHECK(status == attnjit::Status::parse);
  CHECK(message.rfind("mask: col 3570: expression is too deep: 2041 levels of operations, at most 256", 0) == 0);
}
