// The JSON sidecar next to each cached binary: what the kernel is (for operators and `attnjit
// cache list`) and what is needed to trust and use the binary (size, checksum, config).
#pragma once

#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "compile/variant_compiler.hpp"

namespace attnjit::cache {

constexpr int kSidecarVersion = 1;

nlohmann::json to_json(const codegen::KernelConfig& config);
nlohmann::json to_json(const ResourceUsage& usage);
codegen::KernelConfig config_from_json(const nlohmann::json& json);
ResourceUsage resources_from_json(const nlohmann::json& json);

// The sidecar of a freshly compiled binary: `details` (variant, options, resources...) plus
// key, arch, CUDA version, format, file, size, checksum, config, creation time, attnjit version.
nlohmann::json make_sidecar(const std::string& key, const std::string& cuda_version,
                            const KernelBinary& binary, const nlohmann::json& details);

// Parses a sidecar read from disk: a discarded value when it is not JSON. Note: values nested
// deeper than a sidecar ever is are dropped while parsing, because nlohmann::json copies and
// compares recursively and a damaged or hostile file must not overflow the stack.
nlohmann::json parse_sidecar(std::string_view text);

// Checks a sidecar against the binary's bytes. Returns an empty string when they agree,
// otherwise why not ("size 1200 != 4096 recorded", "checksum mismatch", "sidecar lacks 'size'").
std::string check_binary(const nlohmann::json& sidecar, std::span<const char> image);

// One line describing the variant of a sidecar: "mask=q_idx >= kv_idx score=score bf16 d128".
std::string variant_summary(const nlohmann::json& sidecar);

}  // namespace attnjit::cache
