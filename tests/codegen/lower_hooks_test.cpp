// Hoisting of the mask and score out of the kernel's element loop (src/codegen/lower_hooks.cpp):
// what is computed per block, per row and per column, and what stays per element.
#include <string>

#include <catch2/catch.hpp>

#include "codegen/lower_hooks.hpp"
#include "expr/test_support.hpp"

using attnjit::codegen::lower_element_hooks;
using attnjit::test::parse_mask;
using attnjit::test::parse_score;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The text of one of the generated functions: from its signature to the closing brace.
std::string function_text(const std::string& hooks, const std::string& name) {
  const std::size_t begin = hooks.find(" " + name + "(");
  REQUIRE(begin != std::string::npos);
  const std::size_t end = hooks.find("\n  }\n", begin);
  REQUIRE(end != std::string::npos);
  return hooks.substr(begin, end - begin);
}

}  // namespace

TEST_CASE("ALiBi's slope is computed once per block and its distance from hoisted indices") {
  const std::string hooks = lower_element_hooks(
      parse_mask(""),
      parse_score("score + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - q_idx)"));
  CHECK(contains(function_text(hooks, "block"), "block_values.v0 = attnjit::ops::fast_exp2_f("));
  CHECK(contains(function_text(hooks, "row"), "row_values.v0 = attnjit::ops::i2f(q_idx);"));
  CHECK(contains(function_text(hooks, "col"), "col_values.v0 = attnjit::ops::i2f(kv_idx);"));
}

TEST_CASE("a document mask reads its tensor once per row and once per column") {
  const std::string hooks = lower_element_hooks(parse_mask("doc[q_idx] == doc[kv_idx]"),
                                                parse_score(""));
  CHECK(contains(function_text(hooks, "row"), "row_values.v0 = attnjit::ops::read_i32(doc, q_idx);"));
  CHECK(contains(function_text(hooks, "col"), "col_values.v0 = attnjit::ops::read_i32(doc, kv_idx);"));
  const std::string mask = function_text(hooks, "mask");
  CHECK(contains(mask, "return row_values.v0 == col_values.v0;"));
  CHECK_FALSE(contains(mask, "args.tensors"));  // nothing left to declare per element
}

TEST_CASE("a division by a per-row value multiplies by its hoisted reciprocal") {
  const std::string hooks = lower_element_hooks(parse_mask(""),
                                                parse_score("score / float(q_idx + 1)"));
  const std::string row = function_text(hooks, "row");
  CHECK(contains(row, "row_values.v0 = attnjit::ops::i2f(attnjit::ops::add_i(q_idx, 1));"));
  CHECK(contains(row, "row_values.v1 = 1.0f / (row_values.v0);"));
  CHECK(contains(function_text(hooks, "score_core"), "return (qk * row_values.v1);"));
  CHECK(contains(function_text(hooks, "score_constants"),
                 "score_constants.factor = 1.4426950408889634f * scale;"));
}

TEST_CASE("masks keep the precise functions; scores get the fast ones") {
  const std::string hooks =
      lower_element_hooks(parse_mask("tanh(float(q_idx - kv_idx)) > 0.5"),
                          parse_score("score + tanh(float(q_idx)) + exp(float(kv_idx)) / score"));
  const std::string mask = function_text(hooks, "mask");
  CHECK(contains(mask, "attnjit::ops::tanh_f("));
  CHECK_FALSE(contains(mask, "fast_"));
  // The per-row and per-column parts of the score are hoisted with their fast forms.
  CHECK(contains(function_text(hooks, "row"), "attnjit::ops::fast_tanh_f(attnjit::ops::i2f(q_idx))"));
  CHECK(contains(function_text(hooks, "col"), "attnjit::ops::fast_exp_f(attnjit::ops::i2f(kv_idx))"));
  // A division by the element's own score is not a hoistable reciprocal.
  CHECK(contains(function_text(hooks, "score_core"), "attnjit::ops::fast_div_f(col_values."));
}

TEST_CASE("the mask and the score share an identical hoisted value") {
  const std::string hooks =
      lower_element_hooks(parse_mask("doc[q_idx] == doc[kv_idx]"),
                          parse_score("score + float(doc[q_idx] - doc[kv_idx])"));
  const std::string row = function_text(hooks, "row");
  CHECK(contains(row, "row_values.v0 = attnjit::ops::read_i32(doc, q_idx);"));
  CHECK_FALSE(contains(row, "row_values.v1"));
  CHECK(contains(function_text(hooks, "score_core"),
                 "attnjit::ops::i2f(attnjit::ops::sub_i(row_values.v0, col_values.v0))"));
}

TEST_CASE("expressions of the element alone hoist nothing") {
  const std::string hooks = lower_element_hooks(parse_mask("q_idx >= kv_idx"), parse_score(""));
  CHECK(contains(hooks, "  struct Block {};\n  struct Row {};\n  struct Col {};\n"));
  CHECK(contains(function_text(hooks, "mask"), "return q_idx >= kv_idx;"));
  CHECK(contains(function_text(hooks, "score_core"), "return qk;"));
  CHECK(contains(function_text(hooks, "score_constants"),
                 "score_constants.factor = 1.4426950408889634f * scale;"));
  CHECK(hooks.find(" score(") == std::string::npos);  // only the factored form is written
}

TEST_CASE("hooks are deterministic") {
  const char* mask = "doc[q_idx] == doc[kv_idx] && bias[h, kv_idx] > cap || q_idx < W";
  const char* score = "cap * tanh(score / cap) + bias[h, kv_idx]";
  CHECK(lower_element_hooks(parse_mask(mask), parse_score(score)) ==
        lower_element_hooks(parse_mask(mask), parse_score(score)));
}

// The factored score (src/codegen/factor_score.cpp): log2(e) * score(qk * scale) as a per-block
// factor times a core with fewer operations per element.
TEST_CASE("soft-capping's factor holds the cap and log2(e), its core one multiply and the tanh") {
  const std::string hooks = lower_element_hooks(parse_mask(""), parse_score("cap * tanh(score / cap)"));
  const std::string constants = function_text(hooks, "score_constants");
  CHECK(contains(constants, "const float cap = attnjit::ops::bits_to_float(args.scalars[1]);"));
  CHECK(contains(constants, "score_constants.c0 = (scale / cap);"));
  CHECK(contains(constants, "score_constants.factor = 1.4426950408889634f * cap;"));
  CHECK(contains(function_text(hooks, "score_core"),
                 "return (attnjit::ops::fast_tanh_f(score_constants.c0 * qk));"));
}

TEST_CASE("ALiBi's factor is the scale; its slope over the scale multiplies the hoisted distance") {
  const std::string hooks = lower_element_hooks(
      parse_mask(""),
      parse_score("score + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - q_idx)"));
  const std::string constants = function_text(hooks, "score_constants");
  CHECK(contains(constants, "score_constants.c0 = (block_values.v0 / scale);"));
  CHECK(contains(constants, "score_constants.factor = 1.4426950408889634f * scale;"));
  CHECK(contains(function_text(hooks, "score_core"),
                 "return (qk + ((col_values.v0 - row_values.v0) * score_constants.c0));"));
}

TEST_CASE("a score under a function or a comparison is passed in as factor times core") {
  const std::string hooks = lower_element_hooks(
      parse_mask(""), parse_score("score > 0.0 ? 2.0 * score : score / float(q_idx + 1)"));
  const std::string core = function_text(hooks, "score_core");
  // The condition reads the scaled score; the per-row divisor is a hoisted reciprocal.
  CHECK(contains(core, "(scale * qk)") == false);
  CHECK(contains(core, "score_constants.c"));
  // A factor of literals alone is passed through runtime_f (expr_ops.cuh).
  CHECK(contains(function_text(hooks, "score_constants"),
                 "score_constants.factor = attnjit::ops::runtime_f(1.4426950408889634f * 1.0f);"));
  CHECK_FALSE(contains(core, "score "));  // no unscaled score is left
}

// With the factor known at compile time, ptxas scheduled the sm90 kernel's 128 x 176 tiles at
// head dim 128 so that `30 * tanh(score / 30)` spilled 196 bytes where `cap * tanh(score / cap)`
// spilled none (kernel_resources_test checks the compiled kernel); a literal factor now reaches
// the kernel as a run-time value, a parameter's or the scale's as it always did.
TEST_CASE("a soft-cap written with literals keeps its factor a run-time value") {
  const std::string literal = function_text(
      lower_element_hooks(parse_mask(""), parse_score("30 * tanh(score / 30)")), "score_constants");
  CHECK(contains(literal, "score_constants.c0 = (scale / 30.0f);"));
  CHECK(contains(literal,
                 "score_constants.factor = attnjit::ops::runtime_f(1.4426950408889634f * 30.0f);"));
  const std::string exponent = function_text(
      lower_element_hooks(parse_mask(""), parse_score("5e1 * tanh(score / 5e1)")),
      "score_constants");
  CHECK(contains(exponent, "attnjit::ops::runtime_f("));
  for (const char* score : {"cap * tanh(score / cap)", "score * 2.0", "score + float(kv_idx)"}) {
    INFO(score);
    CHECK_FALSE(contains(
        function_text(lower_element_hooks(parse_mask(""), parse_score(score)), "score_constants"),
        "runtime_f"));
  }
}

TEST_CASE("with the row shift ALiBi's element is qk, its distance per row and key tile") {
  const std::string hooks = lower_element_hooks(
      parse_mask(""),
      parse_score("score + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - q_idx)"),
      /*row_shift=*/true);
  CHECK(contains(function_text(hooks, "score_constants"),
                 "score_constants.c0 = (block_values.v0 / scale);"));
  CHECK(contains(function_text(hooks, "score_core"), "return qk;"));
  CHECK(contains(hooks, "static constexpr bool kScoreRowShift = true;"));
  CHECK(contains(hooks, "static constexpr bool kScoreKeySlope = true;"));
  CHECK(contains(function_text(hooks, "score_key_slope"), "return score_constants.c0;"));
  // One integer difference, converted once: exact while it is below 2^24.
  CHECK(contains(function_text(hooks, "score_row_shift"),
                 "return (score_constants.c0 * attnjit::ops::i2f(attnjit::ops::sub_i(key_base, "
                 "q_idx)));"));
}

TEST_CASE("the row shift takes negated distances, per-row values and block terms") {
  SECTION("a distance negated: the slope's sign moves into its constant") {
    const std::string hooks = lower_element_hooks(
        parse_mask(""), parse_score("score - 0.5 * float(q_idx - kv_idx)"), true);
    CHECK(contains(function_text(hooks, "score_core"), "return qk;"));
    CHECK(contains(function_text(hooks, "score_constants"),
                   "score_constants.c0 = ((-(-1.0f * 0.5f)) / scale);"));
    CHECK(contains(function_text(hooks, "score_row_shift"), "sub_i(key_base, q_idx)"));
  }
  SECTION("a per-row tensor value and a per-block term: no key slope") {
    const std::string hooks = lower_element_hooks(
        parse_mask(""), parse_score("score + bias[0, q_idx] + float(h) * 0.5"), true);
    CHECK(contains(hooks, "static constexpr bool kScoreKeySlope = false;"));
    CHECK_FALSE(contains(hooks, "score_key_slope("));
    CHECK(contains(function_text(hooks, "score_core"), "return qk;"));
    const std::string shift = function_text(hooks, "score_row_shift");
    CHECK(contains(shift, "row_values.v0"));
    CHECK(contains(shift, "score_constants.c"));
  }
  SECTION("a per-column tensor value stays in the core") {
    const std::string hooks = lower_element_hooks(
        parse_mask(""), parse_score("score + bias[h, kv_idx] + 0.25 * float(kv_idx - q_idx)"),
        true);
    CHECK(contains(function_text(hooks, "score_core"), "col_values.v0"));
    CHECK(contains(function_text(hooks, "score_row_shift"), "sub_i(key_base, q_idx)"));
  }
  SECTION("soft-capping plus ALiBi: the core is the tanh, the distance over the cap") {
    const std::string hooks = lower_element_hooks(
        parse_mask(""), parse_score("cap * tanh(score / cap) + 0.25 * float(kv_idx - q_idx)"),
        true);
    CHECK(contains(function_text(hooks, "score_core"), "fast_tanh_f"));
    CHECK(contains(function_text(hooks, "score_constants"), "score_constants.factor = "
                                                            "1.4426950408889634f * cap;"));
    CHECK(contains(function_text(hooks, "score_constants"), "(0.25f / cap)"));
  }
}

TEST_CASE("the row shift leaves scores that are not such a sum as they were") {
  for (const char* score : {"2.0 * (score + float(kv_idx - q_idx))",  // not a top-level sum
                            "float(kv_idx - q_idx)",                  // no term reads the score
                            "score + bias[q_idx, kv_idx]",            // a per-element term
                            "score + float(kv_idx * kv_idx)",         // not a multiple of kv_idx
                            "score * float(q_idx)"}) {                // a product, not a sum
    INFO(score);
    CHECK(lower_element_hooks(parse_mask(""), parse_score(score), true) ==
          lower_element_hooks(parse_mask(""), parse_score(score), false));
  }
}
