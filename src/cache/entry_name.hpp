// Where an entry lives and what its files are called; the one rule for every reader and writer
// (the loader, `cache verify`, `cache list`, `cache clear`):
//   <root>/v1/<arch>/cuda-<cuda version>/<label>-<key>.<format>   the binary ("cubin", "ptx")
//   <root>/v1/<arch>/cuda-<cuda version>/<label>-<key>.json       its sidecar
//   <root>/v1/<arch>/cuda-<cuda version>/<label>-<key>.lock       its writers' lock
// The label says what the entry is to someone reading `ls` ("bf16-d128"); the key is what it
// is exactly.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace attnjit::cache {

constexpr const char* kLayoutDir = "v1";

struct EntryId {
  std::string arch;          // "sm_90"
  std::string cuda_version;  // "13.0"
  std::string label;         // "bf16-d128"; may be empty
  std::string key;           // lowercase hex, 16 to 64 digits
  std::string format;        // the binary's extension: "cubin", "ptx"
};

// Throws Error(invalid_argument) naming the field that could not be part of a file name:
// arch and CUDA version [A-Za-z0-9_.] (not starting with '.'), label [a-z0-9-], key lowercase
// hex, format [a-z0-9] (1 to 16 characters).
void validate_entry_id(const EntryId& id);
bool is_format_name(std::string_view text);

std::string version_dir_name(std::string_view cuda_version);  // "cuda-13.0"
std::string entry_stem(const EntryId& id);        // "bf16-d128-<key>", or "<key>" without a label
std::string binary_file_name(const EntryId& id);  // "<stem>.<format>"
std::string sidecar_file_name(const EntryId& id);  // "<stem>.json"
std::string lock_file_name(const EntryId& id);     // "<stem>.lock"

// A sidecar's file name back to its label and key; nullopt for any other name (temporaries,
// binaries, locks, names this rule never makes).
struct EntryStem {
  std::string label;
  std::string key;
};
std::optional<EntryStem> parse_sidecar_file_name(std::string_view file_name);
// "cuda-13.0" -> "13.0"; nullopt for other names.
std::optional<std::string> parse_version_dir_name(std::string_view dir_name);

}  // namespace attnjit::cache
