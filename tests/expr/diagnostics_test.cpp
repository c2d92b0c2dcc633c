// Formatting of error reports and name suggestions (tests for src/expr/diagnostics.cpp).
#include <catch2/catch.hpp>

#include "expr/diagnostics.hpp"

using namespace attnjit::expr;

TEST_CASE("edit distance counts insertions, deletions, substitutions and transpositions") {
  auto [a, b, distance] = GENERATE(table<const char*, const char*, int>({
      {"kv_idx", "kv_idx", 0},
      {"kv_idz", "kv_idx", 1},
      {"kvidx", "kv_idx", 1},
      {"kv_dix", "kv_idx", 1},
      {"q_idx", "kv_idx", 2},
      {"abc", "xyz", 3},
  }));
  CAPTURE(a, b);
  CHECK(edit_distance(a, b, 5) == distance);
}

TEST_CASE("edit distance stops at the limit") {
  CHECK(edit_distance(std::string(3000, 'a'), "kv_idx", 2) == 3);
  CHECK(edit_distance("abcdef", "uvwxyz", 2) == 3);
}

TEST_CASE("diagnostics print in source order with a caret under the span") {
  const std::string text = format_diagnostics(
      "score", "a + bb", {{{4, 6}, "second"}, {{0, 1}, "first"}});
  CHECK(text ==
        "score: col 1: first\n"
        "  a + bb\n"
        "  ^\n"
        "score: col 5: second\n"
        "  a + bb\n"
        "      ^~");
}

TEST_CASE("control and non-ASCII bytes keep the caret aligned") {
  const std::string text = format_diagnostics("mask", "\t\xc3\xa9 x", {{{4, 5}, "here"}});
  CHECK(text == "mask: col 5: here\n   ?? x\n      ^");
}
