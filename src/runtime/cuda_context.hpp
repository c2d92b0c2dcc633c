// Per-context state of the CUDA backend: the current context, device properties, loaded kernel
// modules and tensor-summary workspaces. Internal to the CUDA backend.
#pragma once

#include <cuda.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "jit/variant_compiler.hpp"
#include "runtime/cuda_backend.hpp"

namespace attnjit::cuda {

struct ContextRef {
  CUcontext context = nullptr;
  unsigned long long id = 0;  // cuCtxGetId: unique for the life of the process
  CUdevice device = 0;
};

// The calling thread's current context, retaining and setting device 0's primary context when
// there is none. Throws Error(no_device) without a driver or a device.
ContextRef current_context();

DeviceInfo query_device(CUdevice device);

struct LoadedKernel {
  CUfunction forward = nullptr;
  CUfunction summary = nullptr;  // null when the module has no summary entry
  CUfunction combine = nullptr;  // the split-KV merge; null in sm90-family modules
  CUfunction decode = nullptr;   // the decoding entry; null where the module has none
  int forward_blocks_per_sm = 1;  // the residency each entry was built for
  int decode_blocks_per_sm = 1;
  // The carveout rule the entries were last given (use_carveout); kCarveoutUnset before.
  mutable std::atomic<int> carveout_rule{kCarveoutUnset};
  static constexpr int kCarveoutUnset = -1;
};

// The shared-memory carveout (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) of every entry
// of `loaded`, for a call made with LaunchChoices::uniform_carveout `uniform`; the driver is asked
// only when the rule differs from the one the entries last got. uniform: every entry asks for the
// most shared memory, so that the kernels of a call (summaries, forward or decoding entry, merge)
// never differ in their SM's L1 / shared-memory split: a kernel launched with a different
// preference than the one before may wait for the SMs to drain and change it (CUDA's
// documentation of cuFuncSetCacheConfig), which would also keep a programmatic launch from
// starting early. Not uniform (ATTNJIT_CARVEOUT=off, the rule before it): only entries of two or
// more blocks per SM ask for it, the others state no preference. A refused hint is logged.
void use_carveout(const LoadedKernel& loaded, bool uniform);

// The kernel's module in `context`, loaded and configured on first use. Thread-safe.
const LoadedKernel& load_kernel(const ContextRef& context, const DeviceInfo& device,
                                const KernelBinary& kernel);

// Device scratch for tensor summaries, one per (context, stream) so that calls on different
// streams never share it. Hold `lock` from the first write to the last launch reading it.
struct Workspace {
  std::mutex mutex;
  CUdeviceptr data = 0;
  std::size_t bytes = 0;
};

// A workspace of at least `bytes` for `stream`, locked. Growing it waits for the stream, since
// earlier launches on it may still read the old buffer.
std::pair<Workspace*, std::unique_lock<std::mutex>> acquire_workspace(const ContextRef& context,
                                                                      CUstream stream,
                                                                      std::size_t bytes);

}  // namespace attnjit::cuda
