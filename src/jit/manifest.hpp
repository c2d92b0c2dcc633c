// Manifests: named variants to compile ahead of time (cache/standard.json is the standard one).
//
//   {"version": 1, "dtypes": ["bf16", "fp16"], "head_dims": [64, 128],
//    "variants": [{"name": "sliding_window", "mask": "q_idx >= kv_idx && q_idx - kv_idx < W",
//                  "params": ["W:int"], "tensors": [], "dtypes": [...], "head_dims": [...],
//                  "example": {"params": {"W": 1024}}}]}
//
// Top-level dtypes / head_dims are defaults that a variant may override; "example" holds values
// the demo uses and is kept as is.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "jit/variant_compiler.hpp"

namespace attnjit {

struct ManifestVariant {
  std::string name;
  std::string mask;   // as written; empty means the default
  std::string score;
  expr::Signature signature;
  std::vector<DType> dtypes;   // after applying the top-level default
  std::vector<int> head_dims;  // after applying the top-level default
  nlohmann::json example;      // null when absent
  // Whether its calls may read a paged key/value cache: prewarm compiles the paged kernel too
  // (the variant's "paged_kv", else the manifest's, else false).
  bool paged_kv = false;
};

struct Manifest {
  std::string source;  // file name, or "standard.json (embedded)"
  std::vector<ManifestVariant> variants;
};

struct NamedVariantSpec {
  std::string name;  // "causal"
  VariantSpec spec;
  bool paged_kv = false;  // ManifestVariant::paged_kv
};

// A manifest lists variants: anything larger is refused before parsing.
constexpr std::size_t kMaxManifestBytes = std::size_t{1} << 20;

// Parses and checks a manifest: its size, nesting depth (64), the JSON, every field's type,
// unknown fields, duplicate names, params/tensors declarations and both expressions, in time
// linear in its size. Throws Error(invalid_argument) as
//   "<source>: <JSON pointer>: <reason>", e.g. "m.json: /variants/2/params/0: invalid ...".
Manifest parse_manifest(std::string_view json_text, std::string_view source_name);
// Reads (at most kMaxManifestBytes + 1 bytes) and parses a file. Throws Error(io) when it cannot
// be read.
Manifest load_manifest(const std::filesystem::path& path);

// cache/standard.json as embedded in the library at build time.
std::string_view standard_manifest_json();
const Manifest& standard_manifest();

// One VariantSpec per variant x dtype x head dim, in manifest order, then dtype, then head dim.
std::vector<NamedVariantSpec> expand_manifest(const Manifest& manifest);

// "bf16" / "fp16" (also "bfloat16" / "float16"); throws Error(invalid_argument) otherwise.
DType parse_kernel_dtype(std::string_view text);

}  // namespace attnjit
