#include "jit/kernel_cache.hpp"

#include "common/error.hpp"
#include "common/log.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "jit/kernel_sidecar.hpp"

namespace attnjit {
namespace fs = std::filesystem;
namespace {

// Note: a refused entry is reported once per process, however many caches or threads see it.
void warn_refused_once(const fs::path& sidecar, const std::string& reason) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    const std::lock_guard lock(mutex);
    if (!warned.insert(sidecar.string()).second) return;
  }
  log().warn("kernel cache: refusing entry {} ({}); recompiling and replacing it",
             sidecar.string(), reason);
}

}  // namespace

KernelCache::KernelCache(fs::path root, cache::StoreOptions options)
    : store_(root.empty() ? cache::default_cache_dir() : std::move(root), options) {}

cache::EntryId KernelCache::entry_id(const KernelRequest& request) const {
  return {request.arch, nvrtc::nvrtc_version(), request.label, request.key,
          request.ptx ? "ptx" : "cubin"};
}

std::shared_ptr<const KernelBinary> KernelCache::find_request(std::string_view request) const {
  const std::lock_guard lock(mutex_);
  const auto it = by_request_.find(request);
  return it == by_request_.end() ? nullptr : it->second;
}

void KernelCache::remember_request(std::string request, std::shared_ptr<const KernelBinary> binary) {
  const std::lock_guard lock(mutex_);
  by_request_.insert_or_assign(std::move(request), std::move(binary));
}

void KernelCache::clear_memory() {
  const std::lock_guard lock(mutex_);
  by_request_.clear();
  by_key_.clear();
}

std::shared_ptr<std::mutex> KernelCache::key_mutex(const std::string& key) {
  const std::lock_guard lock(mutex_);
  auto& slot = key_mutexes_[key];
  if (!slot) slot = std::make_shared<std::mutex>();
  return slot;
}

void KernelCache::warn_once(const std::string& what, const std::string& reason) {
  {
    const std::lock_guard lock(mutex_);
    if (!warnings_.insert(what + reason).second) return;
  }
  log().warn("kernel cache: {}: {}", what, reason);
}

std::shared_ptr<const KernelBinary> KernelCache::load_from_disk(const KernelRequest& request,
                                                                const cache::EntryId& id) {
  cache::LoadResult loaded = store_.load(id);
  if (!loaded.entry) {
    if (!loaded.problem.empty()) warn_refused_once(store_.sidecar_path(id), loaded.problem);
    return nullptr;
  }
  const nlohmann::json& sidecar = loaded.entry->sidecar;
  if (const std::string problem =
          check_kernel_sidecar(sidecar, request.variant, request.config, request.ptx);
      !problem.empty()) {
    warn_refused_once(store_.sidecar_path(id), problem);
    return nullptr;
  }
  auto binary = std::make_shared<KernelBinary>();
  binary->arch = request.arch;
  binary->is_ptx = request.ptx;
  binary->image = std::move(loaded.entry->binary);
  binary->config = request.config;
  binary->entry_resources = entry_resources_from_json(sidecar);
  binary->key = request.key;
  binary->path = loaded.entry->binary_path.string();
  binary->origin = KernelOrigin::disk;
  return binary;
}

std::string KernelCache::store(const KernelRequest& request, const cache::EntryId& id,
                               const CompiledKernel& compiled) {
  nlohmann::json fields = compiled.details.is_object() ? compiled.details : nlohmann::json::object();
  fields["variant"] = request.variant;
  fields["summary"] = variant_summary(request.variant);
  fields["config"] = to_json(request.config);
  fields["resources"] = to_json(compiled.binary.entry_resources);
  try {
    return store_.store(id, compiled.binary.image, fields).string();
  } catch (const Error& e) {
    warn_once("kernels are compiled in memory only, not stored", e.what());
    return {};
  }
}

CacheLookup KernelCache::get_or_compile(const KernelRequest& request,
                                        const std::function<CompiledKernel()>& compile) {
  const auto in_memory = [&]() -> std::optional<CacheLookup> {
    const std::lock_guard lock(mutex_);
    if (const auto it = by_key_.find(request.key); it != by_key_.end()) {
      return CacheLookup{it->second, KernelOrigin::memory};
    }
    return std::nullopt;
  };
  if (auto found = in_memory()) return *found;
  // One thread of this process per key; the entry's file lock below serialises processes.
  const auto in_process = key_mutex(request.key);
  const std::lock_guard key_lock(*in_process);
  if (auto found = in_memory()) return *found;
  const auto remember = [&](std::shared_ptr<const KernelBinary> binary, KernelOrigin origin) {
    const std::lock_guard lock(mutex_);
    const auto [it, inserted] = by_key_.try_emplace(request.key, std::move(binary));
    return CacheLookup{it->second, inserted ? origin : KernelOrigin::memory};
  };

  const cache::EntryId id = entry_id(request);
  bool storable = true;
  std::optional<cache::FileLock> file_lock;
  std::string lock_problem;
  try {
    if (auto binary = load_from_disk(request, id)) return remember(binary, KernelOrigin::disk);
    cache::LockAttempt attempt = store_.lock(id);
    switch (attempt.outcome) {
      case cache::LockOutcome::held:
        file_lock = std::move(attempt.lock);
        // Another process may have stored it while we waited for the lock.
        if (auto binary = load_from_disk(request, id)) return remember(binary, KernelOrigin::disk);
        break;
      case cache::LockOutcome::timed_out:
        // Note: storing without the lock could race the holder's write; it will store the
        // kernel itself if it ever finishes.
        log().warn("kernel cache: {}; compiling {} in memory without storing it", attempt.problem,
                   cache::entry_stem(id));
        storable = false;
        break;
      case cache::LockOutcome::unavailable:
        // Writes are atomic, so going on without the lock only risks compiling twice.
        lock_problem = attempt.problem;
        break;
    }
  } catch (const Error& e) {
    // The store refused its root or a directory (not trusted, a symlink, not a directory).
    warn_once("kernels are compiled in memory only, not stored", e.what());
    storable = false;
  }

  CompiledKernel compiled = compile();
  compiled.binary.arch = request.arch;
  compiled.binary.is_ptx = request.ptx;
  compiled.binary.key = request.key;
  compiled.binary.config = request.config;
  compiled.binary.origin = KernelOrigin::compiled;
  compiled.binary.path = storable ? store(request, id, compiled) : std::string();
  // Note: when the store failed too, its warning says why; a lock that failed alone (a symlink
  // or FIFO planted where it belongs) deserves its own.
  if (!compiled.binary.path.empty() && !lock_problem.empty()) {
    warn_once("stored without the entry lock", lock_problem);
  }
  return remember(std::make_shared<const KernelBinary>(std::move(compiled.binary)),
                  KernelOrigin::compiled);
}

}  // namespace attnjit
