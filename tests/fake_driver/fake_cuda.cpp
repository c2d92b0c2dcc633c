// A stand-in libcuda for machines without a GPU: the entry points the CUDA backend resolves
// (through cuGetProcAddress, like the real driver), with host memory as "device" memory. Loaded by
// tests through ATTNJIT_CUDA_DRIVER, so the backend's whole driver path runs unchanged: context
// handling, pointer checks, module loading, parameter-layout checks, workspaces, launches.
//
// Launches run under the SIMT emulator, synchronously, so that later launches and copies see
// their results: through the launcher a test installed (attnjit_fake_cuda_set_launcher), or else
// by the fake itself, which finds the loaded cubin in the kernel cache ($ATTNJIT_CACHE_DIR),
// regenerates its source from the sidecar's variant and builds it for the host. So any program
// (the CLI, the C API) runs on the fake device with real results. The one other module it runs
// is the Hopper probes' (tests/support/hopper_probe_kernels.hpp), so that test_gpu's probe runner
// is exercised here too. The device it pretends to be is set by
// ATTNJIT_FAKE_CUDA_SM (default 90; e.g. 75 for a device attnjit must refuse) and
// ATTNJIT_FAKE_CUDA_DEVICES (default 1; 0 makes cuInit answer CUDA_ERROR_NO_DEVICE).
// ATTNJIT_FAKE_CUDA_LAUNCHES=skip checks and counts launches but runs none (outputs keep what
// they held): a program then compiles every kernel it would use, and nothing more, which is how
// tools/gpu-bundle.sh fills a GPU machine's kernel cache without a GPU.
// ATTNJIT_FAKE_CUDA_OCCUPANCY=N makes cuOccupancyMaxActiveBlocksPerMultiprocessor answer N (a
// device that fits fewer blocks than a kernel was built for).
//
// The entry points are spread by topic: devices and contexts here, modules and launches
// (fake_modules.cpp), memory (fake_memory.cpp), streams, events and graphs (fake_streams.cpp),
// over the shared state of fake_state.hpp.
#include "fake_cuda.h"

#include <cuda.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "fake_state.hpp"

using namespace attnjit::fake_cuda;

namespace {

thread_local CUcontext current_context = nullptr;

}  // namespace

extern "C" {

// ---- The test's side.
ATTNJIT_FAKE_EXPORT void attnjit_fake_cuda_set_launcher(AttnjitFakeLauncher launcher, void* user) {
  std::lock_guard lock(state().mutex);
  state().launcher = launcher;
  state().launcher_user = user;
}

ATTNJIT_FAKE_EXPORT int attnjit_fake_cuda_allocations(AttnjitFakeRange* out, int capacity) {
  std::lock_guard lock(state().mutex);
  int count = 0;
  for (const auto& [address, allocation] : state().allocations) {
    if (count < capacity) out[count] = {reinterpret_cast<void*>(address), allocation.bytes};
    ++count;
  }
  return count;
}

ATTNJIT_FAKE_EXPORT int attnjit_fake_cuda_launch_count() { return state().launches; }
ATTNJIT_FAKE_EXPORT int attnjit_fake_cuda_programmatic_launch_count() {
  return state().programmatic_launches;
}
ATTNJIT_FAKE_EXPORT int attnjit_fake_cuda_module_load_count() { return state().module_loads; }

ATTNJIT_FAKE_EXPORT void* attnjit_fake_cuda_module_global(const char* name) {
  std::lock_guard lock(state().mutex);
  const auto found = state().last_globals.find(name);
  return found == state().last_globals.end() ? nullptr : reinterpret_cast<void*>(found->second);
}

ATTNJIT_FAKE_EXPORT int attnjit_fake_cuda_param_info_past_end() {
  return state().param_info_past_end.load();
}

// ---- Initialisation, errors, devices.
CUresult CUDAAPI cuInit(unsigned int) {
  return env_int("ATTNJIT_FAKE_CUDA_DEVICES", 1) > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_SUCCESS:
      *name = "CUDA_SUCCESS";
      break;
    case CUDA_ERROR_INVALID_VALUE:
      *name = "CUDA_ERROR_INVALID_VALUE";
      break;
    case CUDA_ERROR_OUT_OF_MEMORY:
      *name = "CUDA_ERROR_OUT_OF_MEMORY";
      break;
    case CUDA_ERROR_NO_DEVICE:
      *name = "CUDA_ERROR_NO_DEVICE";
      break;
    case CUDA_ERROR_NOT_FOUND:
      *name = "CUDA_ERROR_NOT_FOUND";
      break;
    case CUDA_ERROR_LAUNCH_FAILED:
      *name = "CUDA_ERROR_LAUNCH_FAILED";
      break;
    case CUDA_ERROR_INVALID_IMAGE:
      *name = "CUDA_ERROR_INVALID_IMAGE";
      break;
    case CUDA_ERROR_NOT_SUPPORTED:
      *name = "CUDA_ERROR_NOT_SUPPORTED";
      break;
    case CUDA_ERROR_ILLEGAL_STATE:
      *name = "CUDA_ERROR_ILLEGAL_STATE";
      break;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
      *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
      break;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
      *name = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
      break;
    default:
      *name = "CUDA_ERROR_UNKNOWN";
      break;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_LAUNCH_FAILED ? "the emulated kernel failed (see the test log)"
                                            : "fake driver error";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = env_int("ATTNJIT_FAKE_CUDA_DEVICES", 1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= env_int("ATTNJIT_FAKE_CUDA_DEVICES", 1)) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice) {
  std::snprintf(name, static_cast<std::size_t>(length), "attnjit fake device (sm_%d)", fake_sm());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  const int sm = fake_sm();
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = sm / 10;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = sm % 10;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = smem_optin(sm);
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = kFakeMultiprocessors;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *value = 50 * 1024 * 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      *value = 1;
      break;
    default:
      *value = 0;
      break;
  }
  return CUDA_SUCCESS;
}

// ---- One context: device 0's primary context.
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
  *context = the_context();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context) {
  *context = current_context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  current_context = context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  if (current_context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetId(CUcontext, unsigned long long* id) {
  *id = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize() { return forbidden_during_capture(); }

// ---- Entry points by name, as the backend resolves them.
CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** function, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult* status) {
  static const std::map<std::string, void*> table = {
#define ATTNJIT_FAKE_ENTRY(name) {#name, reinterpret_cast<void*>(&name)}
      ATTNJIT_FAKE_ENTRY(cuInit),
      ATTNJIT_FAKE_ENTRY(cuDriverGetVersion),
      ATTNJIT_FAKE_ENTRY(cuGetErrorName),
      ATTNJIT_FAKE_ENTRY(cuGetErrorString),
      ATTNJIT_FAKE_ENTRY(cuDeviceGet),
      ATTNJIT_FAKE_ENTRY(cuDeviceGetCount),
      ATTNJIT_FAKE_ENTRY(cuDeviceGetAttribute),
      ATTNJIT_FAKE_ENTRY(cuDeviceGetName),
      ATTNJIT_FAKE_ENTRY(cuDevicePrimaryCtxRetain),
      ATTNJIT_FAKE_ENTRY(cuDevicePrimaryCtxRelease),
      ATTNJIT_FAKE_ENTRY(cuCtxGetCurrent),
      ATTNJIT_FAKE_ENTRY(cuCtxSetCurrent),
      ATTNJIT_FAKE_ENTRY(cuCtxGetDevice),
      ATTNJIT_FAKE_ENTRY(cuCtxGetId),
      ATTNJIT_FAKE_ENTRY(cuCtxSynchronize),
      ATTNJIT_FAKE_ENTRY(cuModuleLoadData),
      ATTNJIT_FAKE_ENTRY(cuModuleUnload),
      ATTNJIT_FAKE_ENTRY(cuModuleGetFunction),
      ATTNJIT_FAKE_ENTRY(cuModuleGetGlobal),
      ATTNJIT_FAKE_ENTRY(cuMemHostAlloc),
      ATTNJIT_FAKE_ENTRY(cuMemFreeHost),
      ATTNJIT_FAKE_ENTRY(cuMemHostGetDevicePointer),
      ATTNJIT_FAKE_ENTRY(cuFuncSetAttribute),
      ATTNJIT_FAKE_ENTRY(cuFuncGetAttribute),
      ATTNJIT_FAKE_ENTRY(cuFuncGetParamInfo),
      ATTNJIT_FAKE_ENTRY(cuLaunchKernel),
      ATTNJIT_FAKE_ENTRY(cuLaunchKernelEx),
      ATTNJIT_FAKE_ENTRY(cuOccupancyMaxActiveBlocksPerMultiprocessor),
      ATTNJIT_FAKE_ENTRY(cuPointerGetAttribute),
      ATTNJIT_FAKE_ENTRY(cuPointerGetAttributes),
      ATTNJIT_FAKE_ENTRY(cuMemAlloc),
      ATTNJIT_FAKE_ENTRY(cuMemFree),
      ATTNJIT_FAKE_ENTRY(cuMemAllocManaged),
      ATTNJIT_FAKE_ENTRY(cuMemAllocAsync),
      ATTNJIT_FAKE_ENTRY(cuMemFreeAsync),
      ATTNJIT_FAKE_ENTRY(cuMemcpyHtoD),
      ATTNJIT_FAKE_ENTRY(cuMemcpyDtoH),
      ATTNJIT_FAKE_ENTRY(cuMemcpyHtoDAsync),
      ATTNJIT_FAKE_ENTRY(cuMemcpyDtoHAsync),
      ATTNJIT_FAKE_ENTRY(cuMemsetD32),
      ATTNJIT_FAKE_ENTRY(cuMemsetD32Async),
      ATTNJIT_FAKE_ENTRY(cuStreamCreate),
      ATTNJIT_FAKE_ENTRY(cuStreamDestroy),
      ATTNJIT_FAKE_ENTRY(cuStreamSynchronize),
      ATTNJIT_FAKE_ENTRY(cuStreamIsCapturing),
      ATTNJIT_FAKE_ENTRY(cuStreamBeginCapture),
      ATTNJIT_FAKE_ENTRY(cuStreamEndCapture),
      ATTNJIT_FAKE_ENTRY(cuGraphInstantiateWithFlags),
      ATTNJIT_FAKE_ENTRY(cuGraphLaunch),
      ATTNJIT_FAKE_ENTRY(cuGraphExecDestroy),
      ATTNJIT_FAKE_ENTRY(cuGraphDestroy),
      ATTNJIT_FAKE_ENTRY(cuEventCreate),
      ATTNJIT_FAKE_ENTRY(cuEventRecord),
      ATTNJIT_FAKE_ENTRY(cuEventSynchronize),
      ATTNJIT_FAKE_ENTRY(cuEventElapsedTime),
      ATTNJIT_FAKE_ENTRY(cuEventDestroy),
      ATTNJIT_FAKE_ENTRY(cuTensorMapEncodeTiled),
#undef ATTNJIT_FAKE_ENTRY
  };
  const auto it = table.find(symbol);
  *function = it == table.end() ? nullptr : it->second;
  if (status != nullptr) {
    *status =
        it == table.end() ? CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND : CU_GET_PROC_ADDRESS_SUCCESS;
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
