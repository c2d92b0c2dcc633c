// Declarations of parameters and tensors (tests for src/expr/signature.cpp).
#include <functional>

#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "expr/signature.hpp"

using namespace attnjit;
using namespace attnjit::expr;

namespace {
std::string invalid_argument(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& error) {
    CHECK(error.status() == Status::invalid_argument);
    return error.what();
  }
  return "";
}
}  // namespace

TEST_CASE("parameter declarations parse") {
  CHECK(parse_param_decl("W:int").name == "W");
  CHECK(parse_param_decl("W:int").type == ValueType::integer);
  CHECK(parse_param_decl("cap:float").type == ValueType::floating);
  CHECK(parse_param_decl(" cap : float ").name == "cap");
  CHECK(to_string(parse_param_decl("cap:float")) == "cap:float");
}

TEST_CASE("tensor declarations parse") {
  const TensorDecl doc = parse_tensor_decl("doc:int32[1]");
  CHECK(doc.name == "doc");
  CHECK(doc.elem == TensorElemType::int32);
  CHECK(doc.rank == 1);
  const TensorDecl bias = parse_tensor_decl("bias:float32[2]");
  CHECK(bias.elem == TensorElemType::float32);
  CHECK(bias.rank == 2);
  CHECK(to_string(bias) == "bias:float32[2]");
}

TEST_CASE("bad declarations are refused with the reason") {
  auto [text, reason] = GENERATE(table<const char*, const char*>({
      {"W", "expected NAME:int or NAME:float"},
      {"W:bool", "type 'bool' is not int or float"},
      {"W:double", "type 'double' is not int or float"},
      {"9W:int", "is not an identifier"},
      {":int", "is not an identifier"},
      {"q_idx:int", "clashes with the built-in 'q_idx'"},
      {"exp:float", "clashes with the function 'exp'"},
      {"float4:int", "is reserved"},
      {"args:int", "is reserved"},
      {"attnjit:int", "is reserved"},
      {"_x:int", "is reserved"},
      {"a__b:int", "is reserved"},
      {"true:int", "is reserved"},
      {"nan:float", "is reserved"},
      {"while:int", "is reserved"},
  }));
  CAPTURE(text);
  CHECK_THAT(invalid_argument([&] { parse_param_decl(text); }), Catch::Contains(reason));
}

TEST_CASE("bad tensor declarations are refused with the reason") {
  auto [text, reason] = GENERATE(table<const char*, const char*>({
      {"doc", "missing ':'"},
      {"doc:int32", "missing '[RANK]'"},
      {"doc:int64[1]", "element type 'int64' is not int32 or float32"},
      {"doc:int32[3]", "rank '3' is not 1 or 2"},
      {"doc:int32[]", "rank '' is not 1 or 2"},
      {"kv_len:int32[1]", "clashes with the built-in"},
  }));
  CAPTURE(text);
  CHECK_THAT(invalid_argument([&] { parse_tensor_decl(text); }), Catch::Contains(reason));
}

TEST_CASE("a signature is validated as a whole") {
  Signature signature;
  signature.params = {{"W", ValueType::integer}};
  signature.tensors = {{"W", TensorElemType::int32, 1}};
  CHECK_THAT(invalid_argument([&] { validate_signature(signature); }), Catch::Contains("declared twice"));

  Signature boolean;
  boolean.params = {{"flag", ValueType::boolean}};
  CHECK_THAT(invalid_argument([&] { validate_signature(boolean); }), Catch::Contains("must be int or float"));

  Signature rank;
  rank.tensors = {{"t", TensorElemType::int32, 3}};
  CHECK_THAT(invalid_argument([&] { validate_signature(rank); }), Catch::Contains("rank 3"));

  Signature many;
  for (int i = 0; i < 17; ++i) many.params.push_back({"p" + std::to_string(i), ValueType::integer});
  CHECK_THAT(invalid_argument([&] { validate_signature(many); }), Catch::Contains("too many parameters"));

  Signature tensors;
  for (int i = 0; i < 9; ++i) tensors.tensors.push_back({"t" + std::to_string(i), TensorElemType::int32, 1});
  CHECK_THAT(invalid_argument([&] { validate_signature(tensors); }), Catch::Contains("too many tensors"));
}

TEST_CASE("signatures look names up by index") {
  Signature signature;
  signature.params = {{"W", ValueType::integer}, {"cap", ValueType::floating}};
  signature.tensors = {{"doc", TensorElemType::int32, 1}};
  CHECK(signature.param_index("cap") == 1);
  CHECK_FALSE(signature.param_index("doc"));
  CHECK(signature.tensor_index("doc") == 0);
  CHECK(std::string(to_string(ValueType::boolean)) == "bool");
}
