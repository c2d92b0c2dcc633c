// Helpers shared by the expression tests.
#pragma once

#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "expr/expression.hpp"

namespace attnjit::test {

// W, prefix: int; cap: float; doc: int32[1]; bias: float32[2].
inline expr::Signature standard_signature() {
  expr::Signature signature;
  signature.params = {{"W", expr::ValueType::integer},
                      {"cap", expr::ValueType::floating},
                      {"prefix", expr::ValueType::integer}};
  signature.tensors = {{"doc", expr::TensorElemType::int32, 1},
                       {"bias", expr::TensorElemType::float32, 2}};
  return signature;
}

inline expr::Expression parse_mask(std::string_view source) {
  return expr::parse_expression(expr::ExprKind::mask, source, standard_signature());
}
inline expr::Expression parse_score(std::string_view source) {
  return expr::parse_expression(expr::ExprKind::score, source, standard_signature());
}

// The message of the parse error thrown for `source`, or "" when it parses.
inline std::string parse_error(expr::ExprKind kind, std::string_view source,
                               const expr::Signature& signature = standard_signature()) {
  try {
    expr::parse_expression(kind, source, signature);
  } catch (const Error& error) {
    CHECK(error.status() == Status::parse);
    return error.what();
  }
  return "";
}

}  // namespace attnjit::test
