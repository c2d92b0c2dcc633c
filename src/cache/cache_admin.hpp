// What `attnjit cache list|verify|clear` needs: enumerate the entries under a cache root, check
// them as the loader does, remove some or all of them.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cache/entry_store.hpp"

namespace attnjit::cache {

struct EntryInfo {
  std::string arch;          // from the directory: "sm_90"
  std::string cuda_version;  // "13.0"
  std::string name;          // the entry's file names without extension: "bf16-d128-<key>"
  std::string key;
  std::filesystem::path sidecar;
  std::filesystem::path binary;   // empty when the sidecar cannot say
  std::string summary;            // the sidecar's "summary" line, or why there is none
  std::uintmax_t size = 0;        // bytes of the binary (0 when missing)
  std::chrono::seconds age{0};    // since the sidecar's creation time (or its mtime)
  std::chrono::seconds unused{0};  // since the entry was last stored or loaded (sidecar mtime)
};

struct EntryProblem {
  EntryInfo entry;
  std::string reason;
};

// Entries (a sidecar <name>.json under v1/<arch>/cuda-<version>/, entry_name.hpp), sorted by
// arch, version, name. Temporary files and lock files are never entries. Nothing is followed
// through a symlink. A missing root has no entries.
std::vector<EntryInfo> list_entries(const std::filesystem::path& root);

// The entries the loader would refuse, each with the loader's reason (EntryStore::load: a
// sidecar unreadable or naming another entry, a binary missing, truncated, corrupted, not a
// regular file, a file or directory not trusted), and every symlink where the layout expects a
// directory.
std::vector<EntryProblem> verify_entries(const std::filesystem::path& root,
                                         const StoreOptions& options = {});
// Every entry of list_entries and every symlink verify_entries reports, each with the reason
// verify_entries would give, or an empty reason when the entry is sound.
std::vector<EntryProblem> check_entries(const std::filesystem::path& root,
                                        const StoreOptions& options = {});

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

// Removes the matching entries (every <name>.* file of each). With no filter, also everything
// else in the entry directories (temporaries of killed writers, locks, orphan binaries), the
// symlinks where the layout expects directories, and the empty directories. Never follows a
// symlink: a link is removed, its target left alone. Throws Error(io) on failure.
ClearResult clear_entries(const std::filesystem::path& root, const ClearFilter& filter);

}  // namespace attnjit::cache
