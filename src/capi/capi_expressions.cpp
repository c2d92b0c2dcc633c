// attnjit_signature_parse and attnjit_expressions_lower: a variant's declarations and
// expressions as text, checked and lowered without a runtime or a compiler (what `attnjit check`
// shows).
#include <memory>
#include <optional>
#include <string>

#include "capi/boundary.hpp"
#include "capi/declarations.hpp"
#include "codegen/lower_expr.hpp"
#include "expr/expression.hpp"

struct ParsedSignature : attnjit_signature {
  explicit ParsedSignature(attnjit::expr::Signature signature)
      : attnjit_signature{}, declarations(std::move(signature)) {
    declarations.fill(static_cast<attnjit_signature&>(*this));
  }
  attnjit::capi::Declarations declarations;
};

struct LoweredExpressions : attnjit_lowered_expressions {
  LoweredExpressions() : attnjit_lowered_expressions{} {}
  std::string canonical_mask_text, canonical_score_text, mask_text, score_text, classify_text;
};

namespace {

using attnjit::capi::guarded;
using attnjit::capi::require;
using attnjit::capi::require_version;

void require_array(const void* array, int count, const char* name) {
  if (count < 0 || (count > 0 && array == nullptr)) {
    attnjit::throw_error(attnjit::Status::invalid_argument, "{} does not match its count {}", name,
                         count);
  }
}

template <typename Decl, typename Parse>
void parse_each(const char* const* texts, int count, const char* name, std::vector<Decl>& into,
                Parse parse) {
  require_array(texts, count, name);
  for (int i = 0; i < count; ++i) {
    if (texts[i] == nullptr) {
      attnjit::throw_error(attnjit::Status::invalid_argument, "{}[{}] is NULL", name, i);
    }
    into.push_back(parse(texts[i]));
  }
}

// The signature a variant description declares, validated.
attnjit::expr::Signature signature_of(const attnjit_variant_desc& desc) {
  attnjit_variant_desc expressions_only = desc;
  expressions_only.dtype = ATTNJIT_DTYPE_FP32;  // not read here; any valid value will do
  attnjit::expr::Signature signature = attnjit::capi::to_spec(expressions_only).signature;
  attnjit::expr::validate_signature(signature);
  return signature;
}

// Parses one expression; a parse error is added to `errors` rather than thrown, so that the
// caller can report both expressions' errors at once.
std::optional<attnjit::expr::Expression> parse_collecting(attnjit::expr::ExprKind kind,
                                                          const char* source,
                                                          const attnjit::expr::Signature& signature,
                                                          std::string& errors) {
  try {
    return attnjit::expr::parse_expression(kind, source != nullptr ? source : "", signature);
  } catch (const attnjit::Error& e) {
    if (e.status() != attnjit::Status::parse) throw;
    errors += errors.empty() ? "" : "\n";
    errors += e.what();
    return std::nullopt;
  }
}

std::unique_ptr<LoweredExpressions> lower(const attnjit_variant_desc& desc) {
  const attnjit::expr::Signature signature = signature_of(desc);
  std::string errors;
  const auto mask = parse_collecting(attnjit::expr::ExprKind::mask, desc.mask, signature, errors);
  const auto score =
      parse_collecting(attnjit::expr::ExprKind::score, desc.score, signature, errors);
  if (!errors.empty()) throw attnjit::Error(attnjit::Status::parse, errors);
  auto result = std::make_unique<LoweredExpressions>();
  result->canonical_mask_text = mask->canonical();
  result->canonical_score_text = score->canonical();
  result->mask_text = attnjit::codegen::lower_element_body(*mask);
  result->score_text = attnjit::codegen::lower_element_body(*score);
  result->classify_text = attnjit::codegen::lower_classify_body(*mask);
  result->canonical_mask = result->canonical_mask_text.c_str();
  result->canonical_score = result->canonical_score_text.c_str();
  result->mask_reads_tensors = mask->reads_tensors() ? 1 : 0;
  result->mask_body = result->mask_text.c_str();
  result->score_body = result->score_text.c_str();
  result->classify_body = result->classify_text.c_str();
  return result;
}

}  // namespace

extern "C" {

attnjit_status attnjit_signature_parse(attnjit_signature** out, const char* const* params,
                                       int num_params, const char* const* tensors,
                                       int num_tensors) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    attnjit::expr::Signature signature;
    parse_each(params, num_params, "params", signature.params,
               [](const char* text) { return attnjit::expr::parse_param_decl(text); });
    parse_each(tensors, num_tensors, "tensors", signature.tensors,
               [](const char* text) { return attnjit::expr::parse_tensor_decl(text); });
    attnjit::expr::validate_signature(signature);
    *out = new ParsedSignature(std::move(signature));
  });
}

// Note: every attnjit_signature handed out is the base of a ParsedSignature.
void attnjit_signature_destroy(attnjit_signature* signature) {
  delete static_cast<ParsedSignature*>(signature);
}

attnjit_status attnjit_expressions_lower(attnjit_lowered_expressions** out,
                                         const attnjit_variant_desc* desc) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(desc, "desc");
    require_version(desc->version, ATTNJIT_VARIANT_DESC_VERSION, "attnjit_variant_desc");
    *out = lower(*desc).release();
  });
}

void attnjit_lowered_expressions_destroy(attnjit_lowered_expressions* lowered) {
  delete static_cast<LoweredExpressions*>(lowered);
}

}  // extern "C"
