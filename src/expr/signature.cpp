#include "expr/signature.hpp"

#include <set>

#include "attnjit/variant_args.cuh"
#include "common/error.hpp"
#include "expr/names.hpp"
#include "expr/operators.hpp"

namespace attnjit::expr {
namespace {

constexpr std::size_t kMaxNameLength = 64;

bool is_identifier(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  auto start = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!start(name.front())) return false;
  for (char c : name) {
    if (!start(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

void validate_name(std::string_view what, const std::string& name, std::set<std::string>& seen) {
  if (!is_identifier(name)) {
    throw_error(Status::invalid_argument,
                "{} name '{}' is not an identifier (letters, digits and '_', not starting with a "
                "digit, at most {} characters)",
                what, name, kMaxNameLength);
  }
  if (find_builtin(name)) {
    throw_error(Status::invalid_argument, "{} name '{}' clashes with the built-in '{}'", what, name, name);
  }
  if (find_function(name)) {
    throw_error(Status::invalid_argument, "{} name '{}' clashes with the function '{}'", what, name, name);
  }
  if (is_literal_keyword(name) || is_reserved_identifier(name)) {
    throw_error(Status::invalid_argument, "{} name '{}' is reserved", what, name);
  }
  if (!seen.insert(name).second) {
    throw_error(Status::invalid_argument, "{} name '{}' is declared twice", what, name);
  }
}

std::string trim(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  const auto end = text.find_last_not_of(" \t");
  return std::string(text.substr(begin, end - begin + 1));
}

}  // namespace

std::optional<int> Signature::param_index(const std::string& name) const {
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i].name == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

std::optional<int> Signature::tensor_index(const std::string& name) const {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

void validate_signature(const Signature& signature) {
  if (signature.params.size() > static_cast<std::size_t>(kMaxParams)) {
    throw_error(Status::invalid_argument, "too many parameters: {} (at most {})",
                signature.params.size(), kMaxParams);
  }
  if (signature.tensors.size() > static_cast<std::size_t>(kMaxTensors)) {
    throw_error(Status::invalid_argument, "too many tensors: {} (at most {})",
                signature.tensors.size(), kMaxTensors);
  }
  std::set<std::string> seen;
  for (const ParamDecl& param : signature.params) {
    validate_name("parameter", param.name, seen);
    if (param.type != ValueType::integer && param.type != ValueType::floating) {
      throw_error(Status::invalid_argument, "parameter '{}' must be int or float, not {}", param.name,
                  to_string(param.type));
    }
  }
  for (const TensorDecl& tensor : signature.tensors) {
    validate_name("tensor", tensor.name, seen);
    if (tensor.elem != TensorElemType::int32 && tensor.elem != TensorElemType::float32) {
      throw_error(Status::invalid_argument, "tensor '{}' has an invalid element type", tensor.name);
    }
    if (tensor.rank != 1 && tensor.rank != 2) {
      throw_error(Status::invalid_argument, "tensor '{}' has rank {}; only rank 1 or 2 is supported",
                  tensor.name, tensor.rank);
    }
  }
}

ParamDecl parse_param_decl(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    throw_error(Status::invalid_argument,
                "invalid parameter declaration '{}': expected NAME:int or NAME:float", text);
  }
  ParamDecl decl;
  decl.name = trim(std::string_view(text).substr(0, colon));
  const std::string type = trim(std::string_view(text).substr(colon + 1));
  if (type == "int") {
    decl.type = ValueType::integer;
  } else if (type == "float") {
    decl.type = ValueType::floating;
  } else {
    throw_error(Status::invalid_argument,
                "invalid parameter declaration '{}': type '{}' is not int or float", text, type);
  }
  Signature single;
  single.params.push_back(decl);
  validate_signature(single);
  return decl;
}

TensorDecl parse_tensor_decl(const std::string& text) {
  auto fail = [&text](std::string_view reason) {
    throw_error(Status::invalid_argument,
                "invalid tensor declaration '{}': {} (expected NAME:int32[RANK] or "
                "NAME:float32[RANK], RANK 1 or 2)",
                text, reason);
  };
  const auto colon = text.find(':');
  if (colon == std::string::npos) fail("missing ':'");
  TensorDecl decl;
  decl.name = trim(std::string_view(text).substr(0, colon));
  const std::string rest = trim(std::string_view(text).substr(colon + 1));
  const auto open = rest.find('[');
  if (open == std::string::npos || rest.back() != ']') fail("missing '[RANK]'");
  const std::string elem = trim(std::string_view(rest).substr(0, open));
  const std::string rank = trim(std::string_view(rest).substr(open + 1, rest.size() - open - 2));
  if (elem == "int32") {
    decl.elem = TensorElemType::int32;
  } else if (elem == "float32") {
    decl.elem = TensorElemType::float32;
  } else {
    fail(fmt::format("element type '{}' is not int32 or float32", elem));
  }
  if (rank == "1") {
    decl.rank = 1;
  } else if (rank == "2") {
    decl.rank = 2;
  } else {
    fail(fmt::format("rank '{}' is not 1 or 2", rank));
  }
  Signature single;
  single.tensors.push_back(decl);
  validate_signature(single);
  return decl;
}

std::string to_string(const ParamDecl& decl) {
  return decl.name + ":" + (decl.type == ValueType::floating ? "float" : "int");
}

std::string to_string(const TensorDecl& decl) {
  return fmt::format("{}:{}[{}]", decl.name, decl.elem == TensorElemType::int32 ? "int32" : "float32",
                     decl.rank);
}

const char* to_string(ValueType type) {
  switch (type) {
    case ValueType::boolean: return "bool";
    case ValueType::integer: return "int";
    case ValueType::floating: return "float";
  }
  return "?";
}

}  // namespace attnjit::expr
