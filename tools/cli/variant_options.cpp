#include "variant_options.hpp"

#include <charconv>
#include <type_traits>

#include "failure.hpp"

namespace attnjit::cli {
namespace {

// "W:int=256" -> ("W:int", "256"); the value is empty when there is no '='.
std::pair<std::string, std::string> split_value(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) return {text, ""};
  return {text.substr(0, eq), text.substr(eq + 1)};
}

template <typename T>
T parse_number(const std::string& text, const std::string& what) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "{}: '{}' is not a valid {}", what, text,
         std::is_integral_v<T> ? "int" : "float");
  }
  return value;
}

}  // namespace

void VariantOptions::add_to(CLI::App& command, bool allow_fp32) {
  command.add_option("--mask", mask, "mask expression (default: true)");
  command.add_option("--score", score, "score expression (default: score)");
  command.add_option("--param", params, "parameter declaration NAME:int|float[=VALUE]");
  command.add_option("--tensor", tensors, "tensor declaration NAME:int32|float32[RANK]");
  auto* dtype_option = command.add_option("--dtype", dtype, "bf16 or fp16")->capture_default_str();
  if (allow_fp32) {
    dtype_option->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
  } else {
    dtype_option->check(CLI::IsMember({"bf16", "fp16"}));
  }
  command.add_option("--head-dim", head_dim, "head dimension")->capture_default_str();
}

c::SignaturePtr VariantOptions::signature() const {
  std::vector<std::string> declarations;
  for (const auto& text : params) declarations.push_back(split_value(text).first);
  std::vector<const char*> param_texts, tensor_texts;
  for (const auto& text : declarations) param_texts.push_back(text.c_str());
  for (const auto& text : tensors) tensor_texts.push_back(text.c_str());
  attnjit_signature* parsed = nullptr;
  c::check(attnjit_signature_parse(&parsed, param_texts.data(),
                                   static_cast<int>(param_texts.size()), tensor_texts.data(),
                                   static_cast<int>(tensor_texts.size())));
  return c::SignaturePtr(parsed);
}

attnjit_dtype VariantOptions::c_dtype() const {
  if (dtype == "fp32") return ATTNJIT_DTYPE_FP32;
  return dtype == "fp16" ? ATTNJIT_DTYPE_FP16 : ATTNJIT_DTYPE_BF16;
}

attnjit_variant_desc VariantOptions::desc(const attnjit_signature& signature) const {
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = mask.c_str();
  desc.score = score.c_str();
  desc.params = signature.params;
  desc.num_params = signature.num_params;
  desc.tensors = signature.tensors;
  desc.num_tensors = signature.num_tensors;
  desc.dtype = c_dtype();
  desc.head_dim = head_dim;
  return desc;
}

std::vector<attnjit_scalar> VariantOptions::param_values(const attnjit_signature& signature) const {
  std::vector<attnjit_scalar> values;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto [decl_text, value_text] = split_value(params[i]);
    const attnjit_param_decl& decl = signature.params[i];
    if (value_text.empty()) {
      fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "--param {}: give a value, e.g. {}=256", params[i],
           decl_text);
    }
    attnjit_scalar value{};
    if (decl.type == ATTNJIT_PARAM_INT) {
      value.i = parse_number<std::int32_t>(value_text, decl.name);
    } else {
      value.f = parse_number<float>(value_text, decl.name);
    }
    values.push_back(value);
  }
  return values;
}

}  // namespace attnjit::cli
