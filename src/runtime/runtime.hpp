// The runtime: one kernel cache and one resolved backend (CUDA or the CPU reference), shared by
// the variants created from it.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace attnjit {

class KernelCache;

enum class Backend { auto_select, cuda, cpu };
const char* backend_name(Backend backend);

struct RuntimeOptions {
  std::string cache_dir;  // empty: ATTNJIT_CACHE_DIR, $XDG_CACHE_HOME/attnjit, ~/.cache/attnjit
  Backend backend = Backend::auto_select;
};

class Runtime {
 public:
  // Backend::cuda throws Error(no_device / unsupported) when no usable GPU is present;
  // Backend::auto_select falls back to the CPU with one warning saying why.
  explicit Runtime(const RuntimeOptions& options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Backend backend() const { return backend_; }  // cuda or cpu, never auto_select
  KernelCache& cache() { return *cache_; }
  // Arch of the current device ("sm_86", "sm_90a": nvrtc::device_arch); CUDA backend only.
  const std::string& device_arch() const { return device_arch_; }
  // That device's SM count (0 on the CPU backend): what decides, without a driver call, whether
  // a call of an sm90-family variant goes to the sm80 kernel for decoding (Variant::forward).
  int device_multiprocessors() const { return device_multiprocessors_; }

 private:
  Backend backend_;
  std::string device_arch_;
  int device_multiprocessors_ = 0;
  std::unique_ptr<KernelCache> cache_;
};

}  // namespace attnjit
