#include "variant_options.hpp"

#include <bit>
#include <charconv>

#include "jit/manifest.hpp"
#include "common/error.hpp"
#include "expr/signature.hpp"

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
    throw_error(Status::invalid_argument, "{}: '{}' is not a valid {}", what, text,
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

VariantSpec VariantOptions::spec() const {
  VariantSpec spec;
  spec.mask = mask;
  spec.score = score;
  for (const auto& text : params) {
    spec.signature.params.push_back(expr::parse_param_decl(split_value(text).first));
  }
  for (const auto& text : tensors) {
    spec.signature.tensors.push_back(expr::parse_tensor_decl(text));
  }
  expr::validate_signature(spec.signature);
  spec.dtype = dtype == "fp32" ? DType::fp32 : parse_kernel_dtype(dtype);
  spec.head_dim = head_dim;
  return spec;
}

std::vector<std::int32_t> VariantOptions::param_values() const {
  std::vector<std::int32_t> values;
  for (const auto& text : params) {
    const auto [decl_text, value_text] = split_value(text);
    const expr::ParamDecl decl = expr::parse_param_decl(decl_text);
    if (value_text.empty()) {
      throw_error(Status::invalid_argument, "--param {}: give a value, e.g. {}=256", text,
                  decl_text);
    }
    if (decl.type == expr::ValueType::integer) {
      values.push_back(parse_number<std::int32_t>(value_text, decl.name));
    } else {
      values.push_back(std::bit_cast<std::int32_t>(parse_number<float>(value_text, decl.name)));
    }
  }
  return values;
}

}  // namespace attnjit::cli
