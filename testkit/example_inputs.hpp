// Per-call values for a manifest's variant (attnjit_manifest_variant), from its "example": params
// by name, a rank-1 tensor given as {"documents": N} holding sorted ids of N equal documents, or
// as {"fill": [f, ...]} holding lengths, element j fill[j % n] of seq_len (per-sequence cache
// lengths, `len[b]`; std::invalid_argument unless fractions in [0, 1]); else fixed defaults (float
// params 30, int params 1024, 4 documents, rank-2 tensors a small [heads, seq_len] table). Used by
// `attnjit demo`, `attnjit bench` and tools/bench. Part of the test kit (testkit/CMakeLists.txt).
#pragma once

#include <cstdint>
#include <vector>

#include "attnjit/attnjit.h"
#include "testkit/device_memory.hpp"

namespace attnjit::testkit {

struct ExampleInputs {
  std::vector<attnjit_scalar> params;                  // one per declared parameter
  std::vector<std::vector<std::int32_t>> tensor_data;  // one per declared tensor (host)
  std::vector<attnjit_tensor_arg> tensors;             // point into tensor_data
};

ExampleInputs example_inputs(const attnjit_manifest_variant& variant, int seq_len, int heads);

// Per-sequence lengths (caches filled to `fractions`, read as `len[b]`): `count` elements,
// element j fractions[j % n] of `length`, rounded. The manifest's {"fill": [...]} and `attnjit
// run --fill`. std::invalid_argument naming the first fraction outside [0, 1], or when there is
// none.
std::vector<std::int32_t> filled_lengths(const std::vector<double>& fractions, std::size_t count,
                                         int length);

// The example's tensors in device memory, and the tensor args that point at them.
struct DeviceTensors {
  std::vector<DeviceBuffer> buffers;
  std::vector<attnjit_tensor_arg> args;
};
DeviceTensors upload_tensors(const ExampleInputs& inputs);

// A manifest's variant, for `dtype` and `head_dim`; its strings point into the manifest.
attnjit_variant_desc manifest_variant_desc(const attnjit_manifest_variant& variant,
                                           attnjit_dtype dtype, int head_dim);

}  // namespace attnjit::testkit
