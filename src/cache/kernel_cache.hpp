// The kernel cache: an in-process map in front of an on-disk store of compiled kernels.
//
// Disk layout, under the root (ATTNJIT_CACHE_DIR, else $XDG_CACHE_HOME/attnjit, else
// ~/.cache/attnjit, or the constructor's argument):
//   v1/<arch>/cuda-<nvrtc version>/<key>.cubin   (or <key>.ptx)
//   v1/<arch>/cuda-<nvrtc version>/<key>.json    sidecar: what the kernel is, for operators
//   v1/<arch>/cuda-<nvrtc version>/<key>.lock    flock'ed while one process compiles the key
// Note: the sidecar is written last and is the commit mark. An entry exists when its sidecar
// parses and the binary's size and checksum match it; anything else (a process killed mid-write,
// a flipped byte) is reported once, recompiled and replaced.
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

#include "compile/variant_compiler.hpp"

namespace attnjit {

// The root when none is given: ATTNJIT_CACHE_DIR, $XDG_CACHE_HOME/attnjit, $HOME/.cache/attnjit,
// then <temp dir>/attnjit-cache when there is no home.
std::filesystem::path default_cache_dir();

// What a compile produces, for the cache to store.
struct CompiledKernel {
  KernelBinary binary;    // image, arch, is_ptx, config, forward_resources
  nlohmann::json details;  // merged into the sidecar: "variant", "options", "resources", ...
};

struct CacheLookup {
  std::shared_ptr<const KernelBinary> binary;  // binary->origin is where it first came from
  KernelOrigin origin = KernelOrigin::compiled;  // where this request found it
};

class KernelCache {
 public:
  // An empty root means default_cache_dir(). Nothing is created until a kernel is stored.
  explicit KernelCache(std::filesystem::path root = {});

  const std::filesystem::path& root() const { return root_; }
  // <root>/v1/<arch>/cuda-<version>
  std::filesystem::path directory(std::string_view arch, std::string_view cuda_version) const;
  std::filesystem::path binary_path(std::string_view arch, std::string_view cuda_version,
                                    std::string_view key, bool ptx) const;
  std::filesystem::path sidecar_path(std::string_view arch, std::string_view cuda_version,
                                     std::string_view key) const;

  // Memory, then disk, then `compile` (under the key's lock, checking the disk again once the
  // lock is held, so concurrent processes compile a key once). A kernel that cannot be stored
  // (read-only or full directory) is returned anyway with an empty path, after a warning.
  // Exceptions from `compile` propagate; nothing is stored then.
  CacheLookup get_or_compile(const std::string& key, std::string_view arch, bool ptx,
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
  std::shared_ptr<const KernelBinary> load_from_disk(const std::string& key, std::string_view arch,
                                                     bool ptx);
  std::string store(const std::string& key, const CompiledKernel& compiled);
  std::shared_ptr<std::mutex> key_mutex(const std::string& key);
  void warn_not_stored(const std::string& reason);

  std::filesystem::path root_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const KernelBinary>, std::less<>> by_request_;
  std::map<std::string, std::shared_ptr<const KernelBinary>, std::less<>> by_key_;
  std::map<std::string, std::shared_ptr<std::mutex>, std::less<>> key_mutexes_;
  std::set<std::string, std::less<>> store_warnings_;
};

}  // namespace attnjit
