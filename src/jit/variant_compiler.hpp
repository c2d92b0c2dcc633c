// From a variant description to a cubin (or PTX) for one arch, through the kernel cache:
// parse -> lower -> generate source -> cache lookup -> NVRTC on a miss.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/short_rows.hpp"
#include "codegen/variant_source.hpp"
#include "compile/resource_usage.hpp"
#include "expr/expression.hpp"
#include "expr/signature.hpp"

namespace attnjit {

struct VariantSpec {
  std::string mask;   // empty means the default "true"
  std::string score;  // empty means the default "score"
  expr::Signature signature;
  DType dtype = DType::bf16;
  int head_dim = 128;
  std::string name;  // optional label for operators (a manifest's "causal"): recorded in the
                     // cache sidecar, not part of the cache key
};

enum class KernelOrigin { memory, disk, compiled };

struct KernelBinary {
  std::string arch;            // "sm_90a"
  bool is_ptx = false;
  std::vector<char> image;     // cubin bytes or PTX text
  codegen::KernelConfig config;
  // Every entry's ptxas report, by entry name (the forward, decoding, summary and merge
  // entries; the sidecar's "resources"); empty for PTX.
  std::map<std::string, ResourceUsage, std::less<>> entry_resources;
  std::string key;             // cache key (hex)
  std::string path;            // cache file, empty when not stored
  KernelOrigin origin = KernelOrigin::compiled;

  // One entry's report; all zeros where the image has no such entry or is PTX (no report).
  const ResourceUsage& resources_of(std::string_view entry) const;
  const ResourceUsage& forward_resources() const { return resources_of(codegen::kForwardEntry); }
  // Of kDecodeEntry, which exists where config.decode_block_n > 0.
  const ResourceUsage& decode_resources() const { return resources_of(codegen::kDecodeEntry); }
};

}  // namespace attnjit

namespace attnjit {

class KernelCache;  // jit/kernel_cache.hpp

// A variant's expressions, parsed and checked once: a Variant keeps them for its lifetime and
// hands them to acquire_variant, so neither a forward call nor a kernel request parses again.
struct ParsedVariant {
  expr::Expression mask;
  expr::Expression score;
};

// Throws Error(parse) / Error(invalid_argument).
ParsedVariant parse_variant(const VariantSpec& spec);
// Whether the mask or the score reads h or num_heads: such a variant's decoding calls cannot
// pack a GQA group's query heads as rows of one block (runtime/forward_plan.hpp, pack_gqa).
bool expressions_use_heads(const ParsedVariant& parsed);

// What codegen compiles for on a validated arch: "sm_90a" -> {90, arch-specific}.
codegen::Target arch_target(const std::string& arch);

// The generated source of a variant for one arch ("sm_80" ... "sm_90a"): parse_expression of
// mask and score, then codegen::generate_kernel_source with the family ATTNJIT_KERNEL_FAMILY
// selects. Throws Error(parse) / Error(unsupported). Note: the default tiles' source; a request
// is served from another where those spill heavily (served_variant_source).
codegen::GeneratedKernel generate_variant_source(const VariantSpec& spec, const std::string& arch);

// The cache key of the variant's kernel: generates the source and hashes it with the templates,
// options, NVRTC version and arch (jit/cache_key.hpp).
std::string variant_cache_key(const VariantSpec& spec, const std::string& arch, bool ptx = false);

// The key and the file the variant's kernel has (or would have) in `cache`:
// <root>/v1/<arch>/cuda-<version>/<dtype>-d<head dim>-<key>.cubin (or .ptx).
struct VariantCacheEntry {
  std::string key;
  std::filesystem::path binary;
};
VariantCacheEntry variant_cache_entry(const VariantSpec& spec, const std::string& arch,
                                      const KernelCache& cache, bool ptx = false);

// The same for a given source (served_variant_source's, say).
VariantCacheEntry variant_cache_entry(const VariantSpec& spec,
                                      const codegen::GeneratedKernel& generated,
                                      const std::string& arch, const KernelCache& cache,
                                      bool ptx = false);

// The source acquire_variant serves `spec` from on `arch` (its standard kernel): the default
// tiles', or, for an sm90 kernel whose default (wide) tiles spill heavily, the base tiles'
// (codegen::sm90_base_tiles_tuning) where their kernel spills less. Deciding that takes the
// kernels' reports, from `cache` (compiled and stored on a miss); other variants need no
// compile.
struct ServedVariantSource {
  codegen::GeneratedKernel generated;
  // Where the base tiles serve: the wide tiles and their kernel's spilled bytes (stored plus
  // loaded); zeros otherwise.
  int wide_block_m = 0;
  int wide_block_n = 0;
  int wide_spill_bytes = 0;
};
// `schedule` paged_kv: the source of the variant's paged kernel in the family ATTNJIT_KERNEL_FAMILY
// and `arch` give (acquire_variant's): on sm_90a the sm90 kernel that paged prefills run.
ServedVariantSource served_variant_source(const VariantSpec& spec, const std::string& arch,
                                          KernelCache& cache,
                                          codegen::Schedule schedule = codegen::Schedule::standard);

// The kernel of `spec` for `arch` ("sm_80" ... "sm_90a"), from the cache's memory, its disk, or
// NVRTC, in that order; compiled kernels are stored. An sm90 kernel whose default tiles spill
// heavily is served with the base tiles (served_variant_source). A compile failure throws
// nvrtc::CompileError (Error(compile)) holding the log and the generated source.
KernelBinary compile_variant(const VariantSpec& spec, const std::string& arch, KernelCache& cache,
                             bool ptx = false);

struct VariantKernel {
  std::shared_ptr<const KernelBinary> binary;
  KernelOrigin origin = KernelOrigin::compiled;  // where this request found it
};

// compile_variant without copying the image. A repeated request is one map lookup on the
// variant's description: no parsing, no source generation, no hashing.
VariantKernel acquire_variant(const VariantSpec& spec, const std::string& arch, KernelCache& cache,
                              bool ptx = false);
// The same for a variant parsed already; `parsed` is parse_variant(spec). `family` overrides
// ATTNJIT_KERNEL_FAMILY (the CUDA backend's SM80 fallback for calls TMA cannot express);
// `schedule` short_rows asks for the variant's short-rows kernel (codegen/short_rows.hpp: the
// sm90 kernel with short_rows_tuning in place of ATTNJIT_TUNE's overrides, whatever `family`),
// paged_kv for a kernel of its paged calls (`family`'s kernel, tiles chosen as for the standard
// schedule, reading through the page table).
VariantKernel acquire_variant(
    const VariantSpec& spec, const ParsedVariant& parsed, const std::string& arch,
    KernelCache& cache, bool ptx = false,
    codegen::FamilyRequest family = codegen::FamilyRequest::environment,
    codegen::Schedule schedule = codegen::Schedule::standard);

}  // namespace attnjit
