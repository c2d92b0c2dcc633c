#include "jit/kernel_sidecar.hpp"

#include <cstdint>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"

namespace attnjit {
namespace {

// Note: get<int>() on a JSON float out of int's range is undefined behaviour, and these numbers
// come from a file on disk, so each must be an integer that fits (else the entry is refused).
int int_field(const nlohmann::json& json, const char* key, std::int64_t min) {
  const auto it = json.is_object() ? json.find(key) : json.end();
  if (it == json.end()) throw Error(Status::cache, fmt::format("sidecar lacks '{}'", key));
  const nlohmann::json& value = *it;
  const bool fits =
      value.is_number_integer() &&
      (value.is_number_unsigned()
           ? value.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<int>::max())
           : value.get<std::int64_t>() >= min &&
                 value.get<std::int64_t>() <= std::numeric_limits<int>::max());
  if (!fits) {
    throw Error(Status::cache, fmt::format("sidecar: '{}' is not an int{}: {}", key,
                                           min >= 0 ? " >= 0" : "", value.dump()));
  }
  return static_cast<int>(value.get<std::int64_t>());
}

// An optional boolean field: absent means false; present, it must be a boolean.
bool bool_field(const nlohmann::json& json, const char* key) {
  const auto it = json.is_object() ? json.find(key) : json.end();
  if (it == json.end()) return false;
  if (!it->is_boolean()) {
    throw Error(Status::cache, fmt::format("sidecar: '{}' is not a boolean: {}", key, it->dump()));
  }
  return it->get<bool>();
}

bool operator==(const codegen::KernelConfig& a, const codegen::KernelConfig& b) {
  return a.family == b.family && a.block_m == b.block_m && a.block_n == b.block_n &&
         a.num_warps == b.num_warps && a.num_stages == b.num_stages &&
         a.smem_bytes == b.smem_bytes && a.overlap == b.overlap && a.persistent == b.persistent &&
         a.p_in_smem == b.p_in_smem && a.tile_handoff == b.tile_handoff &&
         a.poly_exp2 == b.poly_exp2 && a.fold_m192 == b.fold_m192 &&
         (a.family != codegen::KernelFamily::sm90 || a.blocks_per_sm == b.blocks_per_sm) &&
         a.watchdog_ms == b.watchdog_ms && a.timeline == b.timeline &&
         a.decode_block_n == b.decode_block_n && a.decode_stages == b.decode_stages &&
         a.decode_blocks_per_sm == b.decode_blocks_per_sm &&
         a.decode_smem_bytes == b.decode_smem_bytes && a.paged_kv == b.paged_kv &&
         a.split_kv == b.split_kv;
}

}  // namespace

nlohmann::json to_json(const codegen::KernelConfig& config) {
  nlohmann::json json = {{"family", codegen::kernel_family_name(config.family)},
                         {"block_m", config.block_m},       {"block_n", config.block_n},
                         {"num_warps", config.num_warps},   {"num_stages", config.num_stages},
                         {"smem_bytes", config.smem_bytes}, {"overlap", config.overlap},
                         {"persistent", config.persistent}, {"p_in_smem", config.p_in_smem}};
  // Note: only when on, so that the default kernels' sidecars are what they were.
  if (config.watchdog_ms > 0) json["watchdog_ms"] = config.watchdog_ms;
  if (config.timeline) json["timeline"] = true;
  if (config.tile_handoff) json["tile_handoff"] = true;
  if (config.poly_exp2 > 0) json["poly_exp2"] = config.poly_exp2;
  if (config.fold_m192) json["fold_m192"] = true;
  if (config.paged_kv) json["paged_kv"] = true;
  if (config.split_kv) json["split_kv"] = true;
  // Note: the sm90 kernel's only (the sm80 kernel's count is in its source, hence its key).
  if (config.family == codegen::KernelFamily::sm90 && config.blocks_per_sm > 1) {
    json["blocks_per_sm"] = config.blocks_per_sm;
  }
  if (config.decode_block_n > 0) {
    json["decode"] = {{"block_n", config.decode_block_n},
                      {"num_stages", config.decode_stages},
                      {"blocks_per_sm", config.decode_blocks_per_sm},
                      {"smem_bytes", config.decode_smem_bytes}};
  }
  return json;
}

nlohmann::json to_json(const ResourceUsage& usage) {
  return {{"registers", usage.registers},
          {"shared_bytes", usage.shared_bytes},
          {"stack_frame_bytes", usage.stack_frame_bytes},
          {"spill_store_bytes", usage.spill_store_bytes},
          {"spill_load_bytes", usage.spill_load_bytes}};
}

codegen::KernelConfig config_from_json(const nlohmann::json& json) {
  constexpr std::int64_t kAny = std::numeric_limits<int>::min();
  codegen::KernelConfig config;
  // Note: entries written before the sm90 kernel existed have no family; they are sm80 kernels.
  const auto stored = json.is_object() ? json.find("family") : json.end();
  const std::string family =
      stored == json.end() ? "sm80" : stored->is_string() ? stored->get<std::string>() : "";
  if (family != "sm80" && family != "sm90") {
    throw Error(Status::cache, fmt::format("sidecar: 'family' is not sm80 or sm90: {}",
                                           stored->dump()));
  }
  config.family = family == "sm90" ? codegen::KernelFamily::sm90 : codegen::KernelFamily::sm80;
  config.block_m = int_field(json, "block_m", kAny);
  config.block_n = int_field(json, "block_n", kAny);
  config.num_warps = int_field(json, "num_warps", kAny);
  config.num_stages = int_field(json, "num_stages", kAny);
  config.smem_bytes = int_field(json, "smem_bytes", kAny);
  // Note: entries written before the sm90 schedule options existed have neither: both off.
  config.overlap = bool_field(json, "overlap");
  config.persistent = bool_field(json, "persistent");
  config.p_in_smem = bool_field(json, "p_in_smem");
  config.watchdog_ms = json.contains("watchdog_ms") ? int_field(json, "watchdog_ms", 0) : 0;
  config.timeline = bool_field(json, "timeline");
  config.tile_handoff = bool_field(json, "tile_handoff");
  config.poly_exp2 = json.contains("poly_exp2") ? int_field(json, "poly_exp2", 0) : 0;
  config.fold_m192 = bool_field(json, "fold_m192");
  config.paged_kv = bool_field(json, "paged_kv");
  config.split_kv = bool_field(json, "split_kv");
  if (config.family == codegen::KernelFamily::sm90) {
    config.blocks_per_sm = json.contains("blocks_per_sm") ? int_field(json, "blocks_per_sm", 1) : 1;
  }
  // Note: entries written before the decoding entry existed have none.
  if (const auto decode = json.is_object() ? json.find("decode") : json.end();
      decode != json.end()) {
    config.decode_block_n = int_field(*decode, "block_n", 16);
    config.decode_stages = int_field(*decode, "num_stages", 2);
    config.decode_blocks_per_sm = int_field(*decode, "blocks_per_sm", 1);
    config.decode_smem_bytes = int_field(*decode, "smem_bytes", 1);
  }
  return config;
}

ResourceUsage resources_from_json(const nlohmann::json& json) {
  ResourceUsage usage;
  usage.registers = int_field(json, "registers", 0);
  usage.shared_bytes = int_field(json, "shared_bytes", 0);
  usage.stack_frame_bytes = int_field(json, "stack_frame_bytes", 0);
  usage.spill_store_bytes = int_field(json, "spill_store_bytes", 0);
  usage.spill_load_bytes = int_field(json, "spill_load_bytes", 0);
  return usage;
}

nlohmann::json to_json(const std::map<std::string, ResourceUsage, std::less<>>& entries) {
  nlohmann::json json = nlohmann::json::object();
  for (const auto& [entry, usage] : entries) json[entry] = to_json(usage);
  return json;
}

std::map<std::string, ResourceUsage, std::less<>> entry_resources_from_json(
    const nlohmann::json& sidecar) {
  std::map<std::string, ResourceUsage, std::less<>> entries;
  const auto all = sidecar.find("resources");
  if (all == sidecar.end()) return entries;
  if (!all->is_object()) throw Error(Status::cache, "sidecar: 'resources' is not an object");
  for (const auto& [entry, usage] : all->items()) entries[entry] = resources_from_json(usage);
  return entries;
}

std::string missing_report_entry(const std::map<std::string, ResourceUsage, std::less<>>& report,
                                 const codegen::KernelConfig& config) {
  if (!report.count(codegen::kForwardEntry)) return codegen::kForwardEntry;
  if (config.decode_block_n > 0 && !report.count(codegen::kDecodeEntry)) {
    return codegen::kDecodeEntry;
  }
  return {};
}

std::string check_kernel_sidecar(const nlohmann::json& sidecar, const nlohmann::json& variant,
                                 const codegen::KernelConfig& config, bool ptx) {
  const nlohmann::json stored_variant = sidecar.value("variant", nlohmann::json());
  for (const char* field : kVariantIdentityFields) {
    if (!variant.contains(field)) continue;
    const auto stored = stored_variant.is_object() ? stored_variant.find(field) : stored_variant.end();
    if (stored == stored_variant.end() || *stored != variant[field]) {
      return fmt::format("sidecar records variant {} {} but the request is for {}", field,
                         stored == stored_variant.end() ? "(none)" : stored->dump(),
                         variant[field].dump());
    }
  }
  try {
    const auto stored_config = sidecar.find("config");
    if (stored_config == sidecar.end()) return "sidecar lacks 'config'";
    if (!(config_from_json(*stored_config) == config)) {
      return fmt::format("sidecar config {} is not the variant's {}", stored_config->dump(),
                         to_json(config).dump());
    }
    if (!sidecar.contains("resources")) return "sidecar lacks 'resources'";
    const auto entries = entry_resources_from_json(sidecar);
    // A cubin's report names the entries its launches need; PTX has no report.
    if (const std::string missing = ptx ? std::string() : missing_report_entry(entries, config);
        !missing.empty()) {
      std::vector<std::string> listed;
      for (const auto& [entry, usage] : entries) listed.push_back(entry);
      return fmt::format("sidecar's 'resources' lacks '{}' (it lists [{}])", missing,
                         fmt::join(listed, ", "));
    }
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

std::string variant_summary(const nlohmann::json& variant) {
  if (!variant.is_object() || variant.empty()) return "(no variant description)";
  std::string text = variant.contains("name") && variant["name"].is_string()
                         ? variant["name"].get<std::string>() + ": "
                         : std::string();
  const auto text_field = [&variant](const char* key, const char* fallback) {
    const auto it = variant.find(key);
    return it != variant.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
  };
  text += fmt::format("mask='{}' score='{}'", text_field("mask", ""), text_field("score", ""));
  for (const char* list : {"params", "tensors"}) {
    if (variant.contains(list) && variant[list].is_array() && !variant[list].empty()) {
      std::vector<std::string> items;
      for (const auto& item : variant[list]) {
        items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
      }
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

}  // namespace attnjit
