#include "cache/sidecar.hpp"

#include <xxhash.h>

#include <chrono>

#include <fmt/chrono.h>
#include <fmt/format.h>

namespace attnjit::cache {
namespace {

constexpr const char* kIntegrity = "integrity";

std::string dump(const nlohmann::json& json, int indent) {
  // Note: strings from manifests may hold invalid UTF-8; replacing it keeps dump() from throwing
  // and serialises the same way the reader's re-serialisation of the replaced text does.
  return json.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string integrity_of(const nlohmann::json& sidecar) {
  nlohmann::json rest = sidecar;
  rest.erase(kIntegrity);
  const std::string text = dump(rest, -1);
  return checksum(text);
}

std::string string_field(const nlohmann::json& sidecar, const char* name) {
  const auto it = sidecar.find(name);
  return it != sidecar.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string checksum(std::span<const char> bytes) {
  return fmt::format("xxh3-64:{:016x}", XXH3_64bits(bytes.data(), bytes.size()));
}

nlohmann::json make_sidecar(const EntryId& id, std::span<const char> binary,
                            const nlohmann::json& fields) {
  nlohmann::json sidecar = fields.is_object() ? fields : nlohmann::json::object();
  const auto now = std::chrono::system_clock::now();
  sidecar["sidecar_version"] = kSidecarVersion;
  sidecar["key"] = id.key;
  sidecar["arch"] = id.arch;
  sidecar["cuda_version"] = id.cuda_version;
  sidecar["format"] = id.format;
  sidecar["file"] = binary_file_name(id);
  sidecar["size"] = binary.size();
  sidecar["checksum"] = checksum(binary);
  sidecar["created"] = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                                   fmt::gmtime(std::chrono::system_clock::to_time_t(now)));
  sidecar["created_unix"] =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  sidecar["attnjit_version"] = ATTNJIT_VERSION_STRING;
  seal_sidecar(sidecar);
  return sidecar;
}

void seal_sidecar(nlohmann::json& sidecar) { sidecar[kIntegrity] = integrity_of(sidecar); }

std::string serialize_sidecar(const nlohmann::json& sidecar) { return dump(sidecar, 2) + "\n"; }

nlohmann::json parse_sidecar(std::string_view text) {
  constexpr int kMaxDepth = 16;
  const nlohmann::json::parser_callback_t drop_deep =
      [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) { return depth <= kMaxDepth; };
  return nlohmann::json::parse(text, drop_deep, /*allow_exceptions=*/false);
}

std::string check_sidecar(const nlohmann::json& sidecar, const EntryId& id) {
  if (!sidecar.is_object()) return "sidecar is not a JSON object";
  const auto version = sidecar.find("sidecar_version");
  if (version == sidecar.end() || *version != kSidecarVersion) {
    return fmt::format("sidecar version {} is not {} (written by another attnjit version)",
                       version == sidecar.end() ? "(none)" : version->dump(), kSidecarVersion);
  }
  const auto integrity = sidecar.find(kIntegrity);
  if (integrity == sidecar.end() || !integrity->is_string() ||
      integrity->get<std::string>() != integrity_of(sidecar)) {
    return "sidecar integrity check failed (edited or damaged)";
  }
  EntryId recorded{string_field(sidecar, "arch"), string_field(sidecar, "cuda_version"), id.label,
                   string_field(sidecar, "key"), string_field(sidecar, "format")};
  // Note: each of these is what the entry's location says it is; a sidecar saying otherwise
  // belongs to another entry (copied or renamed), however whole it is.
  const std::pair<const char*, std::pair<const std::string*, const std::string*>> fields[] = {
      {"key", {&recorded.key, &id.key}},
      {"arch", {&recorded.arch, &id.arch}},
      {"cuda_version", {&recorded.cuda_version, &id.cuda_version}},
  };
  for (const auto& [name, values] : fields) {
    if (*values.first != *values.second) {
      return fmt::format("sidecar records {} '{}' but the entry is for '{}'", name,
                         *values.first, *values.second);
    }
  }
  if (!is_format_name(recorded.format) || (!id.format.empty() && recorded.format != id.format)) {
    return fmt::format("sidecar records format '{}' but the entry is for '{}'", recorded.format,
                       id.format.empty() ? "a binary" : id.format);
  }
  if (const std::string file = string_field(sidecar, "file"); file != binary_file_name(recorded)) {
    return fmt::format("sidecar names the binary '{}' but the entry's binary is '{}'", file,
                       binary_file_name(recorded));
  }
  const auto size = sidecar.find("size");
  if (size == sidecar.end() || !size->is_number_unsigned()) return "sidecar 'size' is not a size";
  if (size->get<std::uintmax_t>() > kMaxBinaryBytes) {
    return fmt::format("sidecar records a binary of {} bytes, more than the {} allowed",
                       size->get<std::uintmax_t>(), kMaxBinaryBytes);
  }
  if (!sidecar.contains("checksum") || !sidecar["checksum"].is_string()) {
    return "sidecar lacks 'checksum'";
  }
  return {};
}

std::string check_binary(const nlohmann::json& sidecar, std::span<const char> image) {
  const auto size = sidecar.at("size").get<std::uintmax_t>();
  if (size != image.size()) {
    return fmt::format("binary has {} bytes, sidecar records {}", image.size(), size);
  }
  if (sidecar.at("checksum").get<std::string>() != checksum(image)) return "checksum mismatch";
  return {};
}

}  // namespace attnjit::cache
