// Name resolution and type errors (tests for src/expr/typecheck.cpp).
#include <catch2/catch.hpp>

#include "expr/ast.hpp"
#include "expr/test_support.hpp"

using attnjit::expr::ExprKind;
using attnjit::expr::ValueType;
using attnjit::test::parse_error;
using attnjit::test::parse_mask;
using attnjit::test::parse_score;

TEST_CASE("every type error names the column, the reason and the span") {
  auto [kind, source, message] = GENERATE(table<ExprKind, const char*, const char*>({
      {ExprKind::mask, "q_idx >= kv_idz",
       "mask: col 10: unknown name 'kv_idz' (did you mean 'kv_idx'?)\n"
       "  q_idx >= kv_idz\n"
       "           ^~~~~~"},
      {ExprKind::mask, "score > 0",
       "mask: col 1: 'score' is only available in the score expression, not in a mask\n"
       "  score > 0\n"
       "  ^~~~~"},
      {ExprKind::mask, "q_idx - kv_idx",
       "mask: col 1: mask must be a bool expression, got int\n"
       "  q_idx - kv_idx\n"
       "  ^~~~~~~~~~~~~~"},
      {ExprKind::score, "q_idx > 1",
       "score: col 1: score must be a number, got bool\n"
       "  q_idx > 1\n"
       "  ^~~~~~~~~"},
      {ExprKind::mask, "min(1, 2, 3) == 1",
       "mask: col 1: function 'min' takes 2 arguments, got 3\n"
       "  min(1, 2, 3) == 1\n"
       "  ^~~~~~~~~~~~"},
      {ExprKind::score, "exp()",
       "score: col 1: function 'exp' takes 1 argument, got 0\n"
       "  exp()\n"
       "  ^~~~~"},
      {ExprKind::mask, "1.5 % 2 == 1",
       "mask: col 5: operator '%' needs int operands, got float and int (use int() to convert)\n"
       "  1.5 % 2 == 1\n"
       "      ^"},
      {ExprKind::mask, "true + 1 > 0",
       "mask: col 6: operator '+' needs int or float operands, got bool and int; convert with "
       "int() or float(), or choose with where()\n"
       "  true + 1 > 0\n"
       "       ^"},
      {ExprKind::mask, "q_idx == true",
       "mask: col 7: operator '==' cannot compare int with bool\n"
       "  q_idx == true\n"
       "        ^~"},
      {ExprKind::mask, "q_idx && true",
       "mask: col 7: operator '&&' needs bool operands, got int and bool (compare explicitly, e.g. "
       "x != 0)\n"
       "  q_idx && true\n"
       "        ^~"},
      {ExprKind::mask, "(q_idx > 1) & (kv_idx > 2)",
       "mask: col 13: operator '&' needs int operands, got bool and bool (use '&&' for bools)\n"
       "  (q_idx > 1) & (kv_idx > 2)\n"
       "              ^"},
      {ExprKind::mask, "doc[1, 2] == 0",
       "mask: col 1: tensor 'doc' has rank 1 but is indexed with 2 indices\n"
       "  doc[1, 2] == 0\n"
       "  ^~~~~~~~~"},
      {ExprKind::mask, "bias[q_idx, 1.0] > 0",
       "mask: col 13: index 2 of tensor 'bias' must be int, got float (use int())\n"
       "  bias[q_idx, 1.0] > 0\n"
       "              ^~~"},
      {ExprKind::mask, "W[0] == 1",
       "mask: col 1: parameter 'W' is not a tensor and cannot be indexed\n"
       "  W[0] == 1\n"
       "  ^"},
      {ExprKind::mask, "(q_idx + 1)[0] == 1",
       "mask: col 12: only tensors can be indexed\n"
       "  (q_idx + 1)[0] == 1\n"
       "             ^"},
      {ExprKind::mask, "doc(1) == 1",
       "mask: col 1: tensor 'doc' is not a function\n"
       "  doc(1) == 1\n"
       "  ^~~"},
      {ExprKind::mask, "q_idx(1) == 1",
       "mask: col 1: built-in 'q_idx' is not a function\n"
       "  q_idx(1) == 1\n"
       "  ^~~~~"},
      {ExprKind::mask, "expp(1.0) > 0.0",
       "mask: col 1: unknown function 'expp' (did you mean 'exp'?)\n"
       "  expp(1.0) > 0.0\n"
       "  ^~~~"},
      {ExprKind::mask, "doc > 1",
       "mask: col 1: tensor 'doc' must be indexed, as in doc[i]\n"
       "  doc > 1\n"
       "  ^~~"},
      {ExprKind::mask, "exp > 1",
       "mask: col 1: function 'exp' must be called, as in exp(...)\n"
       "  exp > 1\n"
       "  ^~~"},
      {ExprKind::mask, "q_idx ? true : false",
       "mask: col 1: condition of '?:' must be bool, got int\n"
       "  q_idx ? true : false\n"
       "  ^~~~~"},
      {ExprKind::mask, "q_idx > 1 ? 1 : true",
       "mask: col 1: branches of '?:' have different types: int and bool\n"
       "  q_idx > 1 ? 1 : true\n"
       "  ^~~~~~~~~~~~~~~~~~~~"},
      {ExprKind::mask, "!q_idx",
       "mask: col 1: operator '!' needs a bool operand, got int (compare explicitly, e.g. x == 0)\n"
       "  !q_idx\n"
       "  ^"},
      {ExprKind::mask, "~1.0 > 0.0",
       "mask: col 1: operator '~' needs an int operand, got float\n"
       "  ~1.0 > 0.0\n"
       "  ^"},
      {ExprKind::mask, "where(q_idx, true, false)",
       "mask: col 7: condition of where() must be bool, got int\n"
       "  where(q_idx, true, false)\n"
       "        ^~~~~"},
      {ExprKind::mask, "abs(true) > 0",
       "mask: col 5: argument 1 of 'abs' must be int or float, got bool; convert with int() or "
       "float(), or choose with where()\n"
       "  abs(true) > 0\n"
       "      ^~~~"},
  }));
  CAPTURE(source);
  CHECK(parse_error(kind, source) == message);
}

TEST_CASE("unknown names suggest close names of every kind") {
  auto [source, suggestion] = GENERATE(table<const char*, const char*>({
      {"q_idz > 0", "q_idx"},
      {"num_head > 0", "num_heads"},
      {"w > 0", "W"},
      {"prefx > 0", "prefix"},
      {"dco[0] > 0", "doc"},
      {"exp2x(1.0) > 0.0", "exp2"},
      {"clmp(1, 2, 3) > 0", "clamp"},
  }));
  CAPTURE(source);
  CHECK(parse_error(ExprKind::mask, source).find(fmt::format("(did you mean '{}'?)", suggestion)) !=
        std::string::npos);
}

TEST_CASE("far-off unknown names get no suggestion") {
  CHECK(parse_error(ExprKind::mask, "zzz > 0").find("did you mean") == std::string::npos);
  CHECK(parse_error(ExprKind::mask, "q > 0").find("did you mean") == std::string::npos);
  CHECK(parse_error(ExprKind::mask, "foo(1) > 0").find("did you mean") == std::string::npos);
}

TEST_CASE("errors in independent subexpressions are all reported, each once") {
  const std::string message = parse_error(ExprKind::mask, "q_idx >= kv_idz && doc[b] + fooo(1) > true");
  CHECK(message ==
        "mask: col 10: unknown name 'kv_idz' (did you mean 'kv_idx'?)\n"
        "  q_idx >= kv_idz && doc[b] + fooo(1) > true\n"
        "           ^~~~~~\n"
        "mask: col 29: unknown function 'fooo' (did you mean 'floor'?)\n"
        "  q_idx >= kv_idz && doc[b] + fooo(1) > true\n"
        "                              ^~~~");
}

TEST_CASE("mixed int and float arithmetic promotes to float") {
  CHECK(parse_score("q_idx + 0.5").canonical() == "(float(q_idx) + 0.5)");
  CHECK(parse_score("q_idx * 2").canonical() == "float((q_idx * 2))");
  CHECK(parse_mask("q_idx < 2.5").canonical() == "(float(q_idx) < 2.5)");
  CHECK(parse_score("min(q_idx, 2.5)").canonical() == "min(float(q_idx), 2.5)");
  CHECK(parse_score("q_idx > 1 ? 1 : 2.5").canonical() == "((q_idx > 1) ? 1.0 : 2.5)");
  CHECK(parse_score("exp(q_idx)").canonical() == "exp(float(q_idx))");
}

TEST_CASE("abs, min, max and clamp keep int for int arguments") {
  CHECK(parse_mask("abs(q_idx) == 1").root().children[0]->type == ValueType::integer);
  CHECK(parse_mask("min(q_idx, 1) == max(kv_idx, 2)").canonical() == "(min(q_idx, 1) == max(kv_idx, 2))");
  CHECK(parse_mask("clamp(q_idx, 0, W) == 1").root().children[0]->type == ValueType::integer);
  CHECK(parse_mask("sqrt(q_idx) == 1.0").root().children[0]->type == ValueType::floating);
}

TEST_CASE("bools convert explicitly and compare with == and !=") {
  CHECK(parse_mask("int(q_idx > 1) + int(kv_idx > 1) == 1").type() == ValueType::boolean);
  CHECK(parse_score("float(q_idx > kv_idx) * -1e9").type() == ValueType::floating);
  CHECK(parse_mask("(q_idx > 1) != (kv_idx > 1)").type() == ValueType::boolean);
  CHECK(parse_mask("where(q_idx > 1, kv_idx, 1) > 0").type() == ValueType::boolean);
}

TEST_CASE("reads_tensors tells index-only masks apart") {
  CHECK_FALSE(parse_mask("q_idx >= kv_idx").reads_tensors());
  CHECK(parse_mask("doc[q_idx] == doc[kv_idx]").reads_tensors());
  CHECK(parse_score("score + bias[h, kv_idx - q_idx + 4096]").reads_tensors());
}
