// The CLI as a client of the public API: a runtime and a variant created through attnjit.h
// from the command line's variant options, and a C status turned back into the one error
// mechanism (Error), so that commands report failures as they always have.
#pragma once

#include <string>

#include "attnjit/attnjit.hpp"
#include "jit/variant_compiler.hpp"

namespace attnjit::cli {

// Throws Error(status, attnjit_last_error()) unless `status` is ATTNJIT_OK.
void check_status(attnjit_status status);

attnjit_dtype c_dtype(DType dtype);

// cache_dir empty: the default cache.
c::RuntimePtr create_runtime(attnjit_backend backend, const std::string& cache_dir = {});

// The variant `spec` declares, created with attnjit_variant_create (which parses and checks it).
c::VariantPtr create_variant(attnjit_runtime* runtime, const VariantSpec& spec);

}  // namespace attnjit::cli
