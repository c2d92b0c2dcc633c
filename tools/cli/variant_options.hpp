// Command-line options that declare a variant (--mask, --score, --param, --tensor, --dtype,
// --head-dim), shared by the commands that take one. The declarations are parsed and checked by
// the library (attnjit_signature_parse).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "attnjit/attnjit.hpp"

namespace attnjit::cli {

struct VariantOptions {
  std::string mask;
  std::string score;
  std::vector<std::string> params;   // "W:int" or, where values are taken, "W:int=256"
  std::vector<std::string> tensors;  // "doc:int32[1]"
  std::string dtype = "bf16";
  int head_dim = 128;

  void add_to(CLI::App& command, bool allow_fp32 = false);
  // The declarations; throws attnjit::c::Error (invalid argument) for a bad one.
  c::SignaturePtr signature() const;
  // The variant these options declare: its strings point into this object and `signature`.
  attnjit_variant_desc desc(const attnjit_signature& signature) const;
  attnjit_dtype c_dtype() const;
  // The values given as "name:type=value", in declaration order; an error when one is missing.
  std::vector<attnjit_scalar> param_values(const attnjit_signature& signature) const;
};

}  // namespace attnjit::cli
