// The on-disk store of the kernel cache: an entry is a binary and its JSON sidecar under a key
// (entry_name.hpp). The store checks what it reads (ownership and modes, no symlinks, regular
// files of bounded size, the sidecar's integrity and that it names the entry asked for, the
// binary's size and checksum), writes atomically, and hands out per-entry locks. It knows
// nothing of what the binaries are or how they are made (src/jit does).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/entry_name.hpp"
#include "cache/file_lock.hpp"

namespace attnjit::cache {

// The root when none is given: ATTNJIT_CACHE_DIR, $XDG_CACHE_HOME/attnjit, $HOME/.cache/attnjit;
// with neither XDG_CACHE_HOME nor HOME, <temp dir>/attnjit-<uid> (after a warning, once), a
// per-user directory whose ownership is checked like any root.
std::filesystem::path default_cache_dir();

struct StoreOptions {
  // Whose cache it is: every directory and file in it must be owned by this user or by root,
  // and writable by nobody else.
  uid_t user = ::geteuid();
  // How long to wait for another process's lock on an entry (file_lock.hpp).
  std::chrono::milliseconds lock_timeout = lock_timeout_from_env();
};

struct StoredEntry {
  std::vector<char> binary;
  nlohmann::json sidecar;
  std::filesystem::path binary_path;
};

struct LoadResult {
  std::optional<StoredEntry> entry;  // set on a hit
  std::string problem;  // on a miss, why the entry that is there was refused ("" when none is)
};

class EntryStore {
 public:
  explicit EntryStore(std::filesystem::path root, StoreOptions options = {});

  const std::filesystem::path& root() const { return root_; }
  const StoreOptions& options() const { return options_; }
  // <root>/v1/<arch>/cuda-<version>
  std::filesystem::path directory(const EntryId& id) const;
  std::filesystem::path binary_path(const EntryId& id) const;
  std::filesystem::path sidecar_path(const EntryId& id) const;

  // Creates the root (0700, and its missing parents) unless it exists, and checks it like every
  // use does. Throws Error(io) or Error(cache) with the reason.
  void create_root() const;

  // The entry, read and checked (see above): a miss when it is absent or refused. A hit with
  // `record_use` sets the sidecar's mtime to now, the entry's last use for
  // `cache clear --max-size` (a read-only cache keeps the old time). An empty id.format takes
  // the sidecar's (what `cache verify` does). Throws Error(cache) when the root or a directory
  // on the way is refused (the store cannot be used), Error(io) when one cannot be opened.
  LoadResult load(const EntryId& id, bool record_use = true) const;

  // Writes the binary, then its sidecar (make_sidecar of `fields`: the sidecar last, as the
  // commit mark), creating the directories (0700) as needed, after removing temporaries that
  // dead writers left for this entry. Returns the binary's path. Throws Error(io) when it
  // cannot write, Error(cache) when the root or a directory is refused.
  std::filesystem::path store(const EntryId& id, std::span<const char> binary,
                              const nlohmann::json& fields) const;

  // The entry's lock (file_lock.hpp), creating its directory. Never throws.
  LockAttempt lock(const EntryId& id) const;

 private:
  std::optional<Dir> open_entry_dir(const EntryId& id, bool create) const;
  void remove_dead_writers_temporaries(const Dir& dir, const EntryId& id) const;

  std::filesystem::path root_;
  StoreOptions options_;
};

}  // namespace attnjit::cache
