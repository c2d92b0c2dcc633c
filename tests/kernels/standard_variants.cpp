#include "standard_variants.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/error.hpp"

namespace attnjit::test {
namespace {

std::vector<StandardVariant> load(const char* manifest_name) {
  const std::string path = std::string(ATTNJIT_SOURCE_DIR) + "/cache/" + manifest_name;
  std::ifstream file(path);
  if (!file) throw_error(Status::io, "cannot open {}", path);
  const nlohmann::json manifest = nlohmann::json::parse(file);
  std::vector<StandardVariant> variants;
  for (const auto& entry : manifest.at("variants")) {
    expr::Signature signature;
    for (const auto& param : entry.value("params", nlohmann::json::array())) {
      signature.params.push_back(expr::parse_param_decl(param.get<std::string>()));
    }
    for (const auto& tensor : entry.value("tensors", nlohmann::json::array())) {
      signature.tensors.push_back(expr::parse_tensor_decl(tensor.get<std::string>()));
    }
    const std::string mask = entry.value("mask", std::string(expr::kDefaultMask));
    const std::string score = entry.value("score", std::string(expr::kDefaultScore));
    variants.push_back({entry.at("name").get<std::string>(),
                        expr::parse_expression(expr::ExprKind::mask, mask, signature),
                        expr::parse_expression(expr::ExprKind::score, score, signature)});
  }
  return variants;
}

}  // namespace

const std::vector<StandardVariant>& standard_variants() {
  static const std::vector<StandardVariant> variants = load("standard.json");
  return variants;
}

const std::vector<StandardVariant>& decoding_variants() {
  static const std::vector<StandardVariant> variants = load("decoding.json");
  return variants;
}

}  // namespace attnjit::test
