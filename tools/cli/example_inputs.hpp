// Per-call values for a manifest variant, from its "example" (params by name; a rank-1 tensor
// given as {"documents": N} holds sorted ids of N equal documents), else fixed defaults. Shared
// by `attnjit demo` and `attnjit bench`.
#pragma once

#include <cstdint>
#include <vector>

#include "attnjit/variant_args.cuh"
#include "jit/manifest.hpp"

namespace attnjit::cli {

struct VariantInputs {
  VariantArgs host{};  // tensors point into `tensor_data`
  std::vector<std::vector<std::int32_t>> tensor_data;
};

VariantInputs example_inputs(const ManifestVariant& variant, int seq_len, int heads);

}  // namespace attnjit::cli
