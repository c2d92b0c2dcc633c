#include "cache/entry_name.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace attnjit::cache {
namespace {

bool all_of(std::string_view text, bool (*allowed)(char)) {
  return std::all_of(text.begin(), text.end(), allowed);
}
bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_label_char(char c) { return is_lower_alnum(c) || c == '-'; }
bool is_hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool is_dir_char(char c) {
  return is_lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '_' || c == '.';
}

bool is_key(std::string_view text) {
  return text.size() >= 16 && text.size() <= 64 && all_of(text, is_hex_digit);
}
bool is_label(std::string_view text) { return text.size() <= 64 && all_of(text, is_label_char); }
bool is_dir_part(std::string_view text) {
  return !text.empty() && text.size() <= 64 && !text.starts_with('.') && all_of(text, is_dir_char);
}

}  // namespace

bool is_format_name(std::string_view text) {
  return !text.empty() && text.size() <= 16 && text != "json" && text != "lock" &&
         all_of(text, is_lower_alnum);
}

void validate_entry_id(const EntryId& id) {
  const auto check = [](bool ok, const char* field, const std::string& value) {
    if (!ok) {
      throw_error(Status::invalid_argument, "kernel cache: {} '{}' cannot be part of a file name",
                  field, value);
    }
  };
  check(is_dir_part(id.arch), "arch", id.arch);
  check(is_dir_part(id.cuda_version), "CUDA version", id.cuda_version);
  check(is_label(id.label), "label", id.label);
  check(is_key(id.key), "key", id.key);
  check(is_format_name(id.format), "format", id.format);
}

std::string version_dir_name(std::string_view cuda_version) {
  return "cuda-" + std::string(cuda_version);
}

std::string entry_stem(const EntryId& id) {
  return id.label.empty() ? id.key : id.label + "-" + id.key;
}

std::string binary_file_name(const EntryId& id) { return entry_stem(id) + "." + id.format; }
std::string sidecar_file_name(const EntryId& id) { return entry_stem(id) + ".json"; }
std::string lock_file_name(const EntryId& id) { return entry_stem(id) + ".lock"; }

std::optional<EntryStem> parse_sidecar_file_name(std::string_view file_name) {
  if (!file_name.ends_with(".json")) return std::nullopt;
  const std::string_view stem = file_name.substr(0, file_name.size() - 5);
  const auto dash = stem.rfind('-');
  EntryStem parts;
  parts.key = std::string(dash == std::string_view::npos ? stem : stem.substr(dash + 1));
  parts.label = std::string(dash == std::string_view::npos ? "" : stem.substr(0, dash));
  const bool empty_label_with_dash = dash != std::string_view::npos && parts.label.empty();
  if (!is_key(parts.key) || !is_label(parts.label) || empty_label_with_dash) return std::nullopt;
  return parts;
}

std::optional<std::string> parse_version_dir_name(std::string_view dir_name) {
  if (!dir_name.starts_with("cuda-") || !is_dir_part(dir_name.substr(5))) return std::nullopt;
  return std::string(dir_name.substr(5));
}

}  // namespace attnjit::cache
