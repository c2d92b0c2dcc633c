#include "cache/sidecar.hpp"

#include <chrono>
#include <cstdint>
#include <limits>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "cache/cache_key.hpp"
#include "common/error.hpp"

namespace attnjit::cache {

nlohmann::json to_json(const codegen::KernelConfig& config) {
  return {{"block_m", config.block_m},       {"block_n", config.block_n},
          {"num_warps", config.num_warps},   {"num_stages", config.num_stages},
          {"smem_bytes", config.smem_bytes}};
}

nlohmann::json to_json(const ResourceUsage& usage) {
  return {{"registers", usage.registers},
          {"shared_bytes", usage.shared_bytes},
          {"stack_frame_bytes", usage.stack_frame_bytes},
          {"spill_store_bytes", usage.spill_store_bytes},
          {"spill_load_bytes", usage.spill_load_bytes}};
}

namespace {

// Note: get<int>() on a JSON float out of int's range is undefined behaviour, and these numbers
// come from a file on disk, so each must be an integer that fits (else the entry is damaged).
int int_field(const nlohmann::json& json, const char* key) {
  const nlohmann::json& value = json.at(key);
  if (!value.is_number_integer() ||
      (value.is_number_unsigned() ? value.get<std::uint64_t>() > std::numeric_limits<int>::max()
                                  : value.get<std::int64_t>() < std::numeric_limits<int>::min() ||
                                        value.get<std::int64_t>() > std::numeric_limits<int>::max())) {
    throw Error(Status::cache, fmt::format("sidecar: '{}' is not an int: {}", key, value.dump()));
  }
  return static_cast<int>(value.get<std::int64_t>());
}

}  // namespace

codegen::KernelConfig config_from_json(const nlohmann::json& json) {
  codegen::KernelConfig config;
  config.block_m = int_field(json, "block_m");
  config.block_n = int_field(json, "block_n");
  config.num_warps = int_field(json, "num_warps");
  config.num_stages = int_field(json, "num_stages");
  config.smem_bytes = int_field(json, "smem_bytes");
  return config;
}

ResourceUsage resources_from_json(const nlohmann::json& json) {
  ResourceUsage usage;
  usage.registers = int_field(json, "registers");
  usage.shared_bytes = int_field(json, "shared_bytes");
  usage.stack_frame_bytes = int_field(json, "stack_frame_bytes");
  usage.spill_store_bytes = int_field(json, "spill_store_bytes");
  usage.spill_load_bytes = int_field(json, "spill_load_bytes");
  return usage;
}

nlohmann::json make_sidecar(const std::string& key, const std::string& cuda_version,
                            const KernelBinary& binary, const nlohmann::json& details) {
  nlohmann::json sidecar = details.is_object() ? details : nlohmann::json::object();
  const auto now = std::chrono::system_clock::now();
  sidecar["sidecar_version"] = kSidecarVersion;
  sidecar["key"] = key;
  sidecar["arch"] = binary.arch;
  sidecar["cuda_version"] = cuda_version;
  sidecar["format"] = binary.is_ptx ? "ptx" : "cubin";
  sidecar["file"] = key + (binary.is_ptx ? ".ptx" : ".cubin");
  sidecar["size"] = binary.image.size();
  sidecar["checksum"] = checksum(binary.image);
  sidecar["config"] = to_json(binary.config);
  sidecar["forward_resources"] = to_json(binary.forward_resources);
  sidecar["created"] = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(now)));
  sidecar["created_unix"] = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  sidecar["attnjit_version"] = ATTNJIT_VERSION_STRING;
  return sidecar;
}

nlohmann::json parse_sidecar(std::string_view text) {
  constexpr int kMaxDepth = 16;
  const nlohmann::json::parser_callback_t drop_deep =
      [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) { return depth <= kMaxDepth; };
  return nlohmann::json::parse(text, drop_deep, /*allow_exceptions=*/false);
}

std::string check_binary(const nlohmann::json& sidecar, std::span<const char> image) {
  if (!sidecar.is_object()) return "sidecar is not a JSON object";
  for (const char* field : {"size", "checksum"}) {
    if (!sidecar.contains(field)) return fmt::format("sidecar lacks '{}'", field);
  }
  if (!sidecar["size"].is_number_unsigned()) return "sidecar 'size' is not a size";
  const auto size = sidecar["size"].get<std::size_t>();
  if (size != image.size()) return fmt::format("binary has {} bytes, sidecar records {}", image.size(), size);
  if (!sidecar["checksum"].is_string() || sidecar["checksum"].get<std::string>() != checksum(image)) {
    return "checksum mismatch";
  }
  return {};
}

std::string variant_summary(const nlohmann::json& sidecar) {
  const auto variant = sidecar.value("variant", nlohmann::json::object());
  if (!variant.is_object() || variant.empty()) return "(no variant description)";
  std::string text = variant.contains("name") && variant["name"].is_string()
                         ? variant["name"].get<std::string>() + ": "
                         : std::string();
  // Note: sidecars are read back from disk and may have been edited; a field of the wrong type
  // shows as its fallback instead of throwing, so `cache list` and `cache clear` still work.
  const auto text_field = [&variant](const char* key, const char* fallback) {
    const auto it = variant.find(key);
    return it != variant.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
  };
  text += fmt::format("mask='{}' score='{}'", text_field("mask", ""), text_field("score", ""));
  for (const char* list : {"params", "tensors"}) {
    if (variant.contains(list) && variant[list].is_array() && !variant[list].empty()) {
      std::vector<std::string> items;
      for (const auto& item : variant[list]) items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
      text += fmt::format(" {}=[{}]", list, fmt::join(items, ","));
    }
  }
  const auto head_dim = variant.find("head_dim");
  text += fmt::format(" {} d{}", text_field("dtype", "?"),
                      head_dim != variant.end() && head_dim->is_number_integer()
                          ? head_dim->get<std::int64_t>()
                          : 0);
  return text;
}

}  // namespace attnjit::cache
