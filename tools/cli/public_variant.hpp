// The CLI's runtimes and variants, created through the public API (attnjit.h); a failed call
// throws attnjit::c::Error, so that commands report failures as they always have.
#pragma once

#include <optional>
#include <string>

#include "attnjit/attnjit.hpp"

namespace attnjit::cli {

// cache_dir empty: the default cache.
c::RuntimePtr create_runtime(attnjit_backend backend, const std::string& cache_dir = {});

// attnjit_variant_create (which parses and checks the expressions).
c::VariantPtr create_variant(attnjit_runtime* runtime, const attnjit_variant_desc& desc);

// The local GPU's arch ("sm_90"), or nullopt when there is no driver, no device, or only devices
// below sm_80 (a CUDA runtime cannot be created).
std::optional<std::string> local_gpu_arch();

// The root of the cache at cache_dir (empty: the default), as attnjit_cache_path gives it.
std::string cache_root(const std::string& cache_dir);

}  // namespace attnjit::cli
