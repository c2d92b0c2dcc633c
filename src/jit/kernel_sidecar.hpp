// What a kernel's sidecar records beyond the store's own fields (cache/sidecar.hpp), and the
// checks of a stored kernel against the request that found it: the variant it was compiled for
// and the launch configuration, which is derived from the variant, never taken from disk.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "codegen/variant_source.hpp"
#include "compile/resource_usage.hpp"

namespace attnjit {

nlohmann::json to_json(const codegen::KernelConfig& config);
nlohmann::json to_json(const ResourceUsage& usage);
// Every entry's report, by entry name (KernelBinary::entry_resources).
nlohmann::json to_json(const std::map<std::string, ResourceUsage, std::less<>>& entries);
// Throw Error(cache) for a missing field or one that is not an int in range (non-negative
// for resources).
codegen::KernelConfig config_from_json(const nlohmann::json& json);
ResourceUsage resources_from_json(const nlohmann::json& json);

// The sidecar's "resources" (every entry's report, by entry name; none where it is absent).
// Throws Error(cache) when malformed.
std::map<std::string, ResourceUsage, std::less<>> entry_resources_from_json(
    const nlohmann::json& sidecar);

// The fields of a variant description ("variant" in the sidecar) that decide the kernel: the
// canonical expressions, params, tensors, dtype and head dim. The name and the expressions as
// written are for operators (two spellings of one expression share a kernel).
inline constexpr const char* kVariantIdentityFields[] = {
    "mask_canonical", "score_canonical", "params", "tensors", "dtype", "head_dim"};

// The first entry of a module of `config` that `report` (a cubin's ptxas report, by entry name)
// does not describe, or "": the forward entry, and the decoding entry where the config has one.
// Both the cache's check of a stored kernel and the compiler's check of a fresh report use it.
std::string missing_report_entry(const std::map<std::string, ResourceUsage, std::less<>>& report,
                                 const codegen::KernelConfig& config);

// Why a stored kernel's sidecar (checked by the store already) does not fit the request, or "":
// every identity field the requested `variant` has must be equal in the sidecar's, its config
// must be `config`, and its "resources" must be well-formed and, for a cubin (not `ptx`), name
// the forward entry and (where the config has one) the decoding entry.
std::string check_kernel_sidecar(const nlohmann::json& sidecar, const nlohmann::json& variant,
                                 const codegen::KernelConfig& config, bool ptx);

// One line describing a variant description, for `attnjit cache list`:
// "causal: mask='q_idx >= kv_idx' score='score' bf16 d128".
std::string variant_summary(const nlohmann::json& variant);

}  // namespace attnjit
