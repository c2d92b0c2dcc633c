// libFuzzer entry: any byte string through parse_expression (mask and score) and, when it
// parses, through the evaluator, the block analysis, lowering and the generation of the whole
// kernel source (not NVRTC). Errors are fine; crashes, hangs, leaks and undefined behaviour are
// not.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attnjit/variant_args.cuh"
#include "codegen/variant_source.hpp"
#include "common/error.hpp"
#include "expr/block_analysis.hpp"
#include "expr/evaluate.hpp"
#include "expr/expression.hpp"

namespace {

attnjit::expr::Signature fuzz_signature() {
  using namespace attnjit::expr;
  Signature signature;
  signature.params = {{"W", ValueType::integer}, {"cap", ValueType::floating}};
  signature.tensors = {{"doc", TensorElemType::int32, 1}, {"bias", TensorElemType::float32, 2}};
  return signature;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const attnjit::expr::Signature signature = fuzz_signature();
  static const auto default_mask =
      attnjit::expr::parse_expression(attnjit::expr::ExprKind::mask, "", signature);
  static const auto default_score =
      attnjit::expr::parse_expression(attnjit::expr::ExprKind::score, "", signature);
  static const int doc[4] = {0, 0, 1, 1};
  static const float bias[4] = {0.5f, -1.0f, 2.0f, 3.0f};
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  for (auto kind : {attnjit::expr::ExprKind::mask, attnjit::expr::ExprKind::score}) {
    try {
      const auto expression = attnjit::expr::parse_expression(kind, source, signature);
      (void)expression.canonical();
      attnjit::VariantArgs args{};
      args.scalars[0] = 3;
      args.tensors[0] = attnjit::TensorArg{doc, {4, 1}, 1, attnjit::kTensorInt32, {}, {}};
      args.tensors[1] = attnjit::TensorArg{bias, {2, 2}, 2, attnjit::kTensorFloat32, {}, {}};
      const attnjit::expr::ElementIndex at{0, 1, 2, 3, 4, 4, 2};
      const bool is_mask = kind == attnjit::expr::ExprKind::mask;
      if (is_mask) {
        (void)attnjit::expr::evaluate_mask(expression, args, at);
        (void)attnjit::expr::classify_tile(expression, args, attnjit::TileBounds{0, 1, 0, 4, 0, 4, 4, 4, 2});
      } else {
        (void)attnjit::expr::evaluate_score(expression, args, at, 0.25f);
      }
      (void)attnjit::codegen::generate_kernel_source(is_mask ? expression : default_mask,
                                                     is_mask ? default_score : expression,
                                                     attnjit::DType::bf16, 64, 80);
    } catch (const attnjit::Error&) {
      // expected for most inputs
    }
  }
  return 0;
}
