// attnjit_manifest_*: a manifest's variants read through the C API, so that tools iterate over
// the variants a deployment prewarms (the standard ones by default) without parsing the file
// themselves.
#include <memory>
#include <string>
#include <vector>

#include "capi/boundary.hpp"
#include "capi/declarations.hpp"
#include "jit/manifest.hpp"

// What one C variant points into (built in place: the C struct holds pointers into it).
struct ManifestVariantStorage {
  explicit ManifestVariantStorage(const attnjit::ManifestVariant& variant)
      : declarations(variant.signature) {}
  attnjit::capi::Declarations declarations;
  std::vector<attnjit_dtype> dtypes;
  std::string example_json;
};

struct attnjit_manifest {
  attnjit::Manifest manifest;
  std::vector<std::unique_ptr<ManifestVariantStorage>> storage;
  std::vector<attnjit_manifest_variant> variants;
};

namespace {

using attnjit::capi::guarded;
using attnjit::capi::require;

std::unique_ptr<attnjit_manifest> to_c(attnjit::Manifest manifest) {
  auto result = std::make_unique<attnjit_manifest>();
  result->manifest = std::move(manifest);
  const auto& variants = result->manifest.variants;
  for (const attnjit::ManifestVariant& variant : variants) {
    ManifestVariantStorage& storage =
        *result->storage.emplace_back(std::make_unique<ManifestVariantStorage>(variant));
    for (const attnjit::DType dtype : variant.dtypes) {
      storage.dtypes.push_back(attnjit::capi::to_c_dtype(dtype));
    }
    storage.example_json = variant.example.is_null() ? "{}" : variant.example.dump();
    attnjit_manifest_variant c{};
    c.name = variant.name.c_str();
    c.mask = variant.mask.c_str();
    c.score = variant.score.c_str();
    storage.declarations.fill(c);
    c.dtypes = storage.dtypes.data();
    c.num_dtypes = static_cast<int>(storage.dtypes.size());
    c.head_dims = variant.head_dims.data();
    c.num_head_dims = static_cast<int>(variant.head_dims.size());
    c.example_json = storage.example_json.c_str();
    c.paged_kv = variant.paged_kv ? 1 : 0;
    result->variants.push_back(c);
  }
  return result;
}

}  // namespace

extern "C" {

attnjit_status attnjit_manifest_load(attnjit_manifest** out, const char* path) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    *out = to_c(path != nullptr ? attnjit::load_manifest(path) : attnjit::standard_manifest())
               .release();
  });
}

const char* attnjit_manifest_source(const attnjit_manifest* manifest) {
  return manifest != nullptr ? manifest->manifest.source.c_str() : "";
}

size_t attnjit_manifest_count(const attnjit_manifest* manifest) {
  return manifest != nullptr ? manifest->variants.size() : 0;
}

const attnjit_manifest_variant* attnjit_manifest_variant_at(const attnjit_manifest* manifest,
                                                            size_t index) {
  if (manifest == nullptr || index >= manifest->variants.size()) return nullptr;
  return &manifest->variants[index];
}

void attnjit_manifest_destroy(attnjit_manifest* manifest) { delete manifest; }

}  // extern "C"
