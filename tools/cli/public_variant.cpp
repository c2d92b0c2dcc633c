#include "public_variant.hpp"

namespace attnjit::cli {

c::RuntimePtr create_runtime(attnjit_backend backend, const std::string& cache_dir) {
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = backend;
  options.cache_dir = cache_dir.empty() ? nullptr : cache_dir.c_str();
  attnjit_runtime* runtime = nullptr;
  c::check(attnjit_runtime_create(&runtime, &options));
  return c::RuntimePtr(runtime);
}

c::VariantPtr create_variant(attnjit_runtime* runtime, const attnjit_variant_desc& desc) {
  attnjit_variant* variant = nullptr;
  c::check(attnjit_variant_create(&variant, runtime, &desc));
  return c::VariantPtr(variant);
}

std::optional<std::string> local_gpu_arch() {
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = ATTNJIT_BACKEND_CUDA;
  attnjit_runtime* runtime = nullptr;
  if (attnjit_runtime_create(&runtime, &options) != ATTNJIT_OK) return std::nullopt;
  const c::RuntimePtr owned(runtime);
  return std::string(attnjit_runtime_device_arch(runtime));
}

std::string cache_root(const std::string& cache_dir) {
  const char* dir = cache_dir.empty() ? nullptr : cache_dir.c_str();
  return c::sized_text([&](char* buffer, std::size_t capacity, std::size_t* length) {
    return attnjit_cache_path(buffer, capacity, length, dir);
  });
}

}  // namespace attnjit::cli
