#include "cache/kernel_cache.hpp"

#include <cstdlib>

#include "cache/file_io.hpp"
#include "cache/sidecar.hpp"
#include "common/log.hpp"
#include "compile/nvrtc_compiler.hpp"

namespace attnjit {
namespace fs = std::filesystem;
using cache::check_binary;
using cache::read_file;
using cache::write_file_atomic;
namespace {

// Note: a damaged entry is reported once per process, however many caches or threads see it.
void warn_damaged_once(const fs::path& sidecar, const std::string& reason) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    const std::lock_guard lock(mutex);
    if (!warned.insert(sidecar.string()).second) return;
  }
  log().warn("kernel cache: damaged entry {} ({}); recompiling and replacing it", sidecar.string(),
             reason);
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

fs::path default_cache_dir() {
  if (auto dir = env("ATTNJIT_CACHE_DIR"); !dir.empty()) return dir;
  if (auto dir = env("XDG_CACHE_HOME"); !dir.empty()) return fs::path(dir) / "attnjit";
  if (auto home = env("HOME"); !home.empty()) return fs::path(home) / ".cache" / "attnjit";
  std::error_code ec;
  return fs::temp_directory_path(ec) / "attnjit-cache";
}

KernelCache::KernelCache(fs::path root) : root_(root.empty() ? default_cache_dir() : std::move(root)) {}

fs::path KernelCache::directory(std::string_view arch, std::string_view cuda_version) const {
  return root_ / "v1" / std::string(arch) / ("cuda-" + std::string(cuda_version));
}

fs::path KernelCache::binary_path(std::string_view arch, std::string_view cuda_version,
                                  std::string_view key, bool ptx) const {
  return directory(arch, cuda_version) / (std::string(key) + (ptx ? ".ptx" : ".cubin"));
}

fs::path KernelCache::sidecar_path(std::string_view arch, std::string_view cuda_version,
                                   std::string_view key) const {
  return directory(arch, cuda_version) / (std::string(key) + ".json");
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

void KernelCache::warn_not_stored(const std::string& reason) {
  {
    const std::lock_guard lock(mutex_);
    if (!store_warnings_.insert(reason).second) return;
  }
  log().warn("kernel cache: kernels are compiled in memory only, not stored: {}", reason);
}

std::shared_ptr<const KernelBinary> KernelCache::load_from_disk(const std::string& key,
                                                                std::string_view arch, bool ptx) {
  const std::string& version = nvrtc::nvrtc_version();
  const fs::path sidecar_file = sidecar_path(arch, version, key);
  const fs::path image_file = binary_path(arch, version, key, ptx);
  try {
    const auto sidecar_text = read_file(sidecar_file);
    if (!sidecar_text) return nullptr;  // a miss (an orphan binary without sidecar is one too)
    const auto sidecar = cache::parse_sidecar(*sidecar_text);
    if (sidecar.is_discarded()) {
      warn_damaged_once(sidecar_file, "unreadable sidecar");
      return nullptr;
    }
    const auto image = read_file(image_file);
    if (!image) {
      warn_damaged_once(sidecar_file, "binary missing");
      return nullptr;
    }
    if (const std::string problem = check_binary(sidecar, *image); !problem.empty()) {
      warn_damaged_once(sidecar_file, problem);
      return nullptr;
    }
    auto binary = std::make_shared<KernelBinary>();
    binary->arch = std::string(arch);
    binary->is_ptx = ptx;
    binary->image.assign(image->begin(), image->end());
    binary->config = cache::config_from_json(sidecar.at("config"));
    binary->forward_resources = cache::resources_from_json(sidecar.at("forward_resources"));
    binary->key = key;
    binary->path = image_file.string();
    binary->origin = KernelOrigin::disk;
    // Note: the sidecar's mtime records the last use (its creation time is inside it), so that
    // `attnjit cache clear --max-size` removes the least recently used entries. A read-only
    // cache simply keeps the old time.
    std::error_code ignored;
    fs::last_write_time(sidecar_file, fs::file_time_type::clock::now(), ignored);
    return binary;
  } catch (const nlohmann::json::exception& e) {
    warn_damaged_once(sidecar_file, fmt::format("sidecar: {}", e.what()));
  } catch (const Error& e) {
    warn_damaged_once(sidecar_file, e.what());
  }
  return nullptr;
}

std::string KernelCache::store(const std::string& key, const CompiledKernel& compiled) {
  const std::string& version = nvrtc::nvrtc_version();
  const KernelBinary& binary = compiled.binary;
  const fs::path dir = directory(binary.arch, version);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    warn_not_stored(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
    return {};
  }
  const fs::path image_file = binary_path(binary.arch, version, key, binary.is_ptx);
  try {
    // Binary first, sidecar last: the sidecar's presence commits the entry.
    write_file_atomic(image_file, binary.image);
    const std::string sidecar =
        cache::make_sidecar(key, version, binary, compiled.details).dump(2) + "\n";
    write_file_atomic(sidecar_path(binary.arch, version, key), sidecar);
  } catch (const Error& e) {
    warn_not_stored(e.what());
    return {};
  }
  return image_file.string();
}

CacheLookup KernelCache::get_or_compile(const std::string& key, std::string_view arch, bool ptx,
                                        const std::function<CompiledKernel()>& compile) {
  {
    const std::lock_guard lock(mutex_);
    if (const auto it = by_key_.find(key); it != by_key_.end()) {
      return {it->second, KernelOrigin::memory};
    }
  }
  // One thread of this process per key; flock below serialises processes.
  const auto in_process = key_mutex(key);
  const std::lock_guard key_lock(*in_process);
  const auto remember = [&](std::shared_ptr<const KernelBinary> binary, KernelOrigin origin) {
    const std::lock_guard lock(mutex_);
    const auto [it, inserted] = by_key_.try_emplace(key, std::move(binary));
    return CacheLookup{it->second, inserted ? origin : KernelOrigin::memory};
  };
  {
    const std::lock_guard lock(mutex_);
    if (const auto it = by_key_.find(key); it != by_key_.end()) {
      return {it->second, KernelOrigin::memory};
    }
  }
  if (auto binary = load_from_disk(key, arch, ptx)) return remember(binary, KernelOrigin::disk);

  const std::string& version = nvrtc::nvrtc_version();
  std::error_code ec;
  fs::create_directories(directory(arch, version), ec);  // for the lock file; failure is fine
  const auto file_lock = cache::FileLock::acquire(directory(arch, version) / (key + ".lock"));
  if (file_lock) {
    // Another process may have compiled it while we waited for the lock.
    if (auto binary = load_from_disk(key, arch, ptx)) return remember(binary, KernelOrigin::disk);
  }
  CompiledKernel compiled = compile();
  compiled.binary.arch = std::string(arch);
  compiled.binary.is_ptx = ptx;
  compiled.binary.key = key;
  compiled.binary.origin = KernelOrigin::compiled;
  compiled.binary.path = store(key, compiled);
  return remember(std::make_shared<const KernelBinary>(std::move(compiled.binary)),
                  KernelOrigin::compiled);
}

}  // namespace attnjit
