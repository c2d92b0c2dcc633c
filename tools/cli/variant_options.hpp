// Command-line options that declare a variant (--mask, --score, --param, --tensor, --dtype,
// --head-dim), shared by the commands that take one.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "jit/variant_compiler.hpp"

namespace attnjit::cli {

struct VariantOptions {
  std::string mask;
  std::string score;
  std::vector<std::string> params;   // "W:int" or, where values are taken, "W:int=256"
  std::vector<std::string> tensors;  // "doc:int32[1]"
  std::string dtype = "bf16";
  int head_dim = 128;

  void add_to(CLI::App& command, bool allow_fp32 = false);
  // Throws Error(invalid_argument) for a bad declaration.
  VariantSpec spec() const;
  // The values given as "name:type=value", in declaration order; Error when one is missing.
  std::vector<std::int32_t> param_values() const;
};

}  // namespace attnjit::cli
