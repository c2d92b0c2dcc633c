// What `attnjit cache list|verify|clear` needs: enumerate the entries under a cache root, check
// their checksums, remove some or all of them.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace attnjit::cache {

struct EntryInfo {
  std::string arch;          // from the directory: "sm_90"
  std::string cuda_version;  // "13.0"
  std::string key;
  std::filesystem::path sidecar;
  std::filesystem::path binary;   // empty when the sidecar cannot say
  std::string summary;            // variant_summary of the sidecar, or why it is unreadable
  std::uintmax_t size = 0;        // bytes of the binary (0 when missing)
  std::chrono::seconds age{0};    // since the sidecar's creation time (or its mtime)
  std::chrono::seconds unused{0};  // since the entry was last stored or loaded (sidecar mtime)
};

struct EntryProblem {
  EntryInfo entry;
  std::string reason;
};

// Entries (a sidecar *.json under v1/<arch>/cuda-<version>/), sorted by arch, version, key.
// Temporary files and lock files are never entries. A missing root has no entries.
std::vector<EntryInfo> list_entries(const std::filesystem::path& root);

// The entries whose sidecar is unreadable or whose binary is missing, truncated or corrupted.
std::vector<EntryProblem> verify_entries(const std::filesystem::path& root);

struct ClearFilter {
  std::optional<std::string> arch;               // only this arch
  std::optional<std::chrono::seconds> older_than;  // only entries at least this old
  // Of the entries the other fields select, remove the least recently used until their binaries
  // take at most this many bytes.
  std::optional<std::uintmax_t> max_bytes;
};

struct ClearResult {
  std::size_t entries = 0;  // entries removed
  std::size_t files = 0;    // files removed, temporaries, locks and orphans included
  std::uintmax_t bytes = 0;
};

// Removes the matching entries (sidecar, binary, lock). With no filter, also leftover temporary
// files, lock files and orphan binaries, and empty directories. Throws Error(io) on failure.
ClearResult clear_entries(const std::filesystem::path& root, const ClearFilter& filter);

// "512M", "2G", "100K", "1T", "4096" -> bytes (K, M, G, T are powers of 1024; a trailing "B" or
// "iB" is allowed). Throws Error(invalid_argument).
std::uintmax_t parse_size(const std::string& text);

// "7d", "12h", "30m", "45s", "2w" -> seconds. Throws Error(invalid_argument).
std::chrono::seconds parse_age(const std::string& text);
std::string format_age(std::chrono::seconds age);  // "3d", "5h", "12m", "40s"

}  // namespace attnjit::cache
