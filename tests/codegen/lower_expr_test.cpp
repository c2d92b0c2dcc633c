// Lowering of expressions to CUDA statements (src/codegen/lower_expr.cpp): golden text.
#include <catch2/catch.hpp>

#include "codegen/deepest_expressions.hpp"
#include "codegen/lower_expr.hpp"
#include "codegen/variant_source.hpp"
#include "expr/test_support.hpp"
#include "support/small_stack.hpp"

using attnjit::codegen::lower_classify_body;
using attnjit::codegen::lower_element_body;
using attnjit::test::parse_mask;
using attnjit::test::parse_score;

TEST_CASE("element bodies are readable and keep the user's names") {
  CHECK(lower_element_body(parse_mask("q_idx >= kv_idx")) == "  return q_idx >= kv_idx;\n");
  CHECK(lower_element_body(parse_mask("q_idx >= kv_idx && q_idx - kv_idx < W")) ==
        "  const int W = args.scalars[0];\n"
        "  return (q_idx >= kv_idx) && (attnjit::ops::sub_i(q_idx, kv_idx) < W);\n");
  CHECK(lower_element_body(parse_score("cap * tanh(score / cap)")) ==
        "  const float cap = attnjit::ops::bits_to_float(args.scalars[1]);\n"
        "  return cap * attnjit::ops::tanh_f(score / cap);\n");
  CHECK(lower_element_body(parse_mask("doc[q_idx] == doc[kv_idx]")) ==
        "  const attnjit::TensorArg& doc = args.tensors[0];\n"
        "  return attnjit::ops::read_i32(doc, q_idx) == attnjit::ops::read_i32(doc, kv_idx);\n");
  CHECK(lower_element_body(parse_score("")) == "  return score;\n");
}

TEST_CASE("constants lower to exact C++ literals") {
  CHECK(lower_element_body(parse_mask("q_idx > -2147483648")) == "  return q_idx > (-2147483647 - 1);\n");
  CHECK(lower_element_body(parse_score("score * -0.5")) == "  return score * (-0.5f);\n");
  CHECK(lower_element_body(parse_score("score + inf")) == "  return score + attnjit::ops::inf_f();\n");
  CHECK(lower_element_body(parse_score("score + 0.0 / 0.0")) == "  return score + attnjit::ops::nan_f();\n");
  CHECK(lower_element_body(parse_score("float(q_idx > 1)")) == "  return (q_idx > 1) ? 1.0f : 0.0f;\n");
}

TEST_CASE("classify bodies evaluate intervals with the shared operations") {
  CHECK(lower_classify_body(parse_mask("q_idx >= kv_idx && q_idx - kv_idx < W")) ==
        "  if (tile.q_end <= tile.q_begin || tile.kv_end <= tile.kv_begin) return attnjit::kTileEmpty;\n"
        "  const attnjit::ops::IntIv q_idx = attnjit::ops::iv_span(tile.q_begin, tile.q_end);\n"
        "  const attnjit::ops::IntIv kv_idx = attnjit::ops::iv_span(tile.kv_begin, tile.kv_end);\n"
        "  const attnjit::ops::IntIv W = attnjit::ops::iv_int(args.scalars[0]);\n"
        "  return attnjit::ops::tile_class(attnjit::ops::tri_and(attnjit::ops::iv_ge(q_idx, kv_idx), "
        "attnjit::ops::iv_lt(attnjit::ops::iv_sub(q_idx, kv_idx), W)));\n");
  CHECK(lower_classify_body(parse_mask("doc[q_idx] == doc[kv_idx]")) ==
        "  if (tile.q_end <= tile.q_begin || tile.kv_end <= tile.kv_begin) return attnjit::kTileEmpty;\n"
        "  const attnjit::ops::IntIv q_idx = attnjit::ops::iv_span(tile.q_begin, tile.q_end);\n"
        "  const attnjit::ops::IntIv kv_idx = attnjit::ops::iv_span(tile.kv_begin, tile.kv_end);\n"
        "  const attnjit::TensorArg& doc = args.tensors[0];\n"
        "  return attnjit::ops::tile_class(attnjit::ops::iv_eq(attnjit::ops::iv_read_summary(doc, "
        "doc.q_summary, q_idx), attnjit::ops::iv_read_summary(doc, doc.kv_summary, kv_idx)));\n");
  // Other reads: the element where the indices are one value over the tile (ops::iv_read_i32).
  CHECK(
      lower_classify_body(parse_mask("kv_idx < doc[b] && bias[b, h + 1] > cap")) ==
      "  if (tile.q_end <= tile.q_begin || tile.kv_end <= tile.kv_begin) return "
      "attnjit::kTileEmpty;\n"
      "  const attnjit::ops::IntIv b = attnjit::ops::iv_int(tile.b);\n"
      "  const attnjit::ops::IntIv h = attnjit::ops::iv_int(tile.h);\n"
      "  const attnjit::ops::IntIv kv_idx = attnjit::ops::iv_span(tile.kv_begin, tile.kv_end);\n"
      "  const attnjit::ops::FloatIv cap = "
      "attnjit::ops::iv_float(attnjit::ops::bits_to_float(args.scalars[1]));\n"
      "  const attnjit::TensorArg& doc = args.tensors[0];\n"
      "  const attnjit::TensorArg& bias = args.tensors[1];\n"
      "  return attnjit::ops::tile_class(attnjit::ops::tri_and(attnjit::ops::iv_lt(kv_idx, "
      "attnjit::ops::iv_read_i32(doc, b)), attnjit::ops::iv_gt(attnjit::ops::iv_read_f32(bias, b, "
      "attnjit::ops::iv_add(h, attnjit::ops::iv_int(1))), cap)));\n");
  CHECK(lower_classify_body(parse_mask("")) ==
        "  if (tile.q_end <= tile.q_begin || tile.kv_end <= tile.kv_begin) return attnjit::kTileEmpty;\n"
        "  return attnjit::ops::tile_class(attnjit::ops::tri(true));\n");
}

TEST_CASE("lowering is deterministic") {
  const char* source = "doc[q_idx] == doc[kv_idx] && bias[h, kv_idx] > cap || q_idx < W";
  CHECK(lower_element_body(parse_mask(source)) == lower_element_body(parse_mask(source)));
  CHECK(lower_classify_body(parse_mask(source)) == lower_classify_body(parse_mask(source)));
}

TEST_CASE("the deepest accepted expressions lower on a 512 KiB stack") {
  for (const auto& deep : attnjit::test::deepest_sources()) {
    INFO(deep.what);
    std::string error;
    std::size_t source_size = 0;
    attnjit::test::run_on_stack(512 * 1024, [&] {
      try {
        const auto mask = attnjit::expr::parse_expression(attnjit::expr::ExprKind::mask, deep.mask, {});
        const auto score =
            attnjit::expr::parse_expression(attnjit::expr::ExprKind::score, deep.score, {});
        source_size = attnjit::codegen::generate_kernel_source(mask, score, attnjit::DType::bf16, 128, 80)
                          .source.size();
      } catch (const std::exception& e) {
        error = e.what();
      }
    });
    CHECK(error.empty());
    CHECK(source_size > 0);
  }
  // One level more is refused.
  const std::string deeper = "(" + attnjit::test::deepest_sources()[0].mask + ") == true";
  CHECK_THROWS_WITH(parse_mask(deeper), Catch::Contains("expression is too deep"));
}
