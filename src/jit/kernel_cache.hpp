// The kernel cache: an in-process map in front of the on-disk store (cache/entry_store.hpp),
// and the one place that decides where a requested kernel comes from:
//   memory (by request, then by key)
//   -> disk: the store's checks (ownership, no symlinks, sizes, the sidecar's integrity and that
//      it names this key, arch, CUDA version and format, the binary's checksum), then the
//      request's (kernel_sidecar.hpp: the variant it was compiled for, the configuration)
//   -> compile, under the entry's lock (checking the disk again once it is held), and store.
// Note: an entry refused on disk is reported once (warn), recompiled and replaced. A store that
// cannot be used (root or directory refused, not writable, the lock not had within
// ATTNJIT_CACHE_LOCK_TIMEOUT) costs one warning per reason: kernels are compiled in memory and
// every call still succeeds.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cache/entry_store.hpp"
#include "jit/variant_compiler.hpp"

namespace attnjit {

// What a compile produces, for the cache to complete and store.
struct CompiledKernel {
  KernelBinary binary;     // image and entry_resources; the cache sets the other fields
  nlohmann::json details;  // merged into the sidecar: "options", "nvrtc_version", ...
};

// A kernel asked for, and what a stored one must agree with.
struct KernelRequest {
  std::string key;  // jit/cache_key.hpp
  std::string arch;
  bool ptx = false;
  std::string label;             // what the entry's file names start with: "bf16-d128"
  codegen::KernelConfig config;  // the variant's launch configuration (derived, never read)
  nlohmann::json variant;        // its description, recorded in the sidecar and compared
};

struct CacheLookup {
  std::shared_ptr<const KernelBinary> binary;  // binary->origin is where it first came from
  KernelOrigin origin = KernelOrigin::compiled;  // where this request found it
};

class KernelCache {
 public:
  // An empty root means cache::default_cache_dir(). Nothing is created until a kernel is stored.
  explicit KernelCache(std::filesystem::path root = {}, cache::StoreOptions options = {});

  const std::filesystem::path& root() const { return store_.root(); }
  const cache::EntryStore& store() const { return store_; }
  // The request's entry in the store: its arch, the NVRTC version, label, key and format.
  cache::EntryId entry_id(const KernelRequest& request) const;

  // Memory, then disk, then `compile` (see above). A kernel that cannot be stored is returned
  // anyway with an empty path. Exceptions from `compile` propagate; nothing is stored then.
  CacheLookup get_or_compile(const KernelRequest& request,
                             const std::function<CompiledKernel()>& compile);

  // First-level in-process map from a caller's request description (e.g. the variant's
  // expressions, dtype, head dim, arch) to the binary, so a repeated request skips source
  // generation and hashing. Valid within one process, where templates, options and NVRTC are
  // fixed.
  std::shared_ptr<const KernelBinary> find_request(std::string_view request) const;
  void remember_request(std::string request, std::shared_ptr<const KernelBinary> binary);

  // Forget everything held in memory (the disk is untouched).
  void clear_memory();

 private:
  std::shared_ptr<const KernelBinary> load_from_disk(const KernelRequest& request,
                                                     const cache::EntryId& id);
  std::string store(const KernelRequest& request, const cache::EntryId& id,
                    const CompiledKernel& compiled);
  std::shared_ptr<std::mutex> key_mutex(const std::string& key);
  void warn_once(const std::string& what, const std::string& reason);

  cache::EntryStore store_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const KernelBinary>, std::less<>> by_request_;
  std::map<std::string, std::shared_ptr<const KernelBinary>, std::less<>> by_key_;
  std::map<std::string, std::shared_ptr<std::mutex>, std::less<>> key_mutexes_;
  std::set<std::string, std::less<>> warnings_;
};

}  // namespace attnjit
