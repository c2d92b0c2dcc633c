#include "cache/sidecar.hpp"

#include <chrono>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "cache/cache_key.hpp"

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

codegen::KernelConfig config_from_json(const nlohmann::json& json) {
  codegen::KernelConfig config;
  config.block_m = json.at("block_m").get<int>();
  config.block_n = json.at("block_n").get<int>();
  config.num_warps = json.at("num_warps").get<int>();
  config.num_stages = json.at("num_stages").get<int>();
  config.smem_bytes = json.at("smem_bytes").get<int>();
  return config;
}

ResourceUsage resources_from_json(const nlohmann::json& json) {
  ResourceUsage usage;
  usage.registers = json.at("registers").get<int>();
  usage.shared_bytes = json.at("shared_bytes").get<int>();
  usage.stack_frame_bytes = json.at("stack_frame_bytes").get<int>();
  usage.spill_store_bytes = json.at("spill_store_bytes").get<int>();
  usage.spill_load_bytes = json.at("spill_load_bytes").get<int>();
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
  text += fmt::format("mask='{}' score='{}'", variant.value("mask", ""), variant.value("score", ""));
  for (const char* list : {"params", "tensors"}) {
    if (variant.contains(list) && variant[list].is_array() && !variant[list].empty()) {
      std::vector<std::string> items;
      for (const auto& item : variant[list]) items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
      text += fmt::format(" {}=[{}]", list, fmt::join(items, ","));
    }
  }
  text += fmt::format(" {} d{}", variant.value("dtype", "?"), variant.value("head_dim", 0));
  return text;
}

}  // namespace attnjit::cache
