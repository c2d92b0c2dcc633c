// A CPU-backend runtime and a variant over fp32 inputs, through the public C API: what the C API
// tests call attnjit_forward on.
#pragma once

#include <catch2/catch.hpp>

#include "attnjit/attnjit.hpp"

namespace attnjit_test {

struct CpuVariant {
  // `mask` NULL: no mask.
  explicit CpuVariant(int head_dim, const char* mask = nullptr) {
    attnjit_runtime_options options;
    attnjit_runtime_options_init(&options);
    options.backend = ATTNJIT_BACKEND_CPU;
    attnjit_runtime* raw_runtime = nullptr;
    REQUIRE(attnjit_runtime_create(&raw_runtime, &options) == ATTNJIT_OK);
    runtime.reset(raw_runtime);
    attnjit_variant_desc desc;
    attnjit_variant_desc_init(&desc);
    desc.mask = mask;
    desc.dtype = ATTNJIT_DTYPE_FP32;
    desc.head_dim = head_dim;
    attnjit_variant* raw_variant = nullptr;
    REQUIRE(attnjit_variant_create(&raw_variant, runtime.get(), &desc) == ATTNJIT_OK);
    variant.reset(raw_variant);
  }

  attnjit::c::RuntimePtr runtime;
  attnjit::c::VariantPtr variant;
};

}  // namespace attnjit_test
