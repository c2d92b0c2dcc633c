// What a variant declares besides its expressions: named parameters and tensors.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace attnjit::expr {

enum class ValueType { boolean, integer, floating };
enum class TensorElemType { int32, float32 };

struct ParamDecl {
  std::string name;
  ValueType type;  // integer or floating
};

struct TensorDecl {
  std::string name;
  TensorElemType elem;
  int rank;  // 1 or 2
};

// Note: declaration order is the ABI: parameter i is VariantArgs::scalars[i] and tensor i is
// VariantArgs::tensors[i], on the CPU and the GPU alike.
struct Signature {
  std::vector<ParamDecl> params;
  std::vector<TensorDecl> tensors;

  std::optional<int> param_index(const std::string& name) const;
  std::optional<int> tensor_index(const std::string& name) const;
};

// Throws Error(invalid_argument) for: a name that is not an identifier, a name that clashes
// with a built-in, a function or another declaration, a parameter of boolean type, a rank
// other than 1 or 2, more than kMaxParams parameters or kMaxTensors tensors.
void validate_signature(const Signature& signature);

// Parses "W:int", "cap:float" / "doc:int32[1]", "bias:float32[2]" as the CLI and manifest
// spell them. Throws Error(invalid_argument) with the reason.
ParamDecl parse_param_decl(const std::string& text);
TensorDecl parse_tensor_decl(const std::string& text);
std::string to_string(const ParamDecl& decl);
std::string to_string(const TensorDecl& decl);
const char* to_string(ValueType type);  // "bool", "int", "float"

}  // namespace attnjit::expr
