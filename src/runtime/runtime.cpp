#include "runtime/runtime.hpp"

#include "jit/kernel_cache.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "runtime/cuda_backend.hpp"

namespace attnjit {

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::auto_select: return "auto";
    case Backend::cuda: return "cuda";
    case Backend::cpu: return "cpu";
  }
  return "unknown";
}

Runtime::Runtime(const RuntimeOptions& options) : backend_(options.backend) {
  if (backend_ != Backend::cpu) {
    try {
      const cuda::DeviceInfo device = cuda::current_device();
      device_arch_ = nvrtc::device_arch(device.sm);
      device_multiprocessors_ = device.multiprocessors;
      backend_ = Backend::cuda;
      log().info("using {} ({}) on the cuda backend", device.name, device_arch_);
    } catch (const Error& e) {
      if (backend_ == Backend::cuda) throw;
      // Note: auto falls back once, loudly, so that a missing GPU is never a silent slowdown.
      log().warn("no usable GPU, using the CPU reference backend: {}", e.what());
      backend_ = Backend::cpu;
    }
  }
  cache_ = std::make_unique<KernelCache>(options.cache_dir);
}

Runtime::~Runtime() = default;

}  // namespace attnjit
