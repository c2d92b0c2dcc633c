// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"), never linked, so the
// library loads and runs its CPU paths on machines without an NVIDIA driver.
//
// Every function attnjit calls is declared once in ATTNJIT_CUDA_DRIVER_FUNCTIONS with the ABI
// version it must resolve to. Entries are resolved with cuGetProcAddress (CUDA 12.0+ drivers:
// base name, pinned version, legacy default stream), falling back to dlsym of the versioned
// symbol cuda.h's macros select. A function the installed driver lacks stays null; calling it
// throws Error(Status::cuda), it never crashes.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <memory>
#include <string>

#include "common/error.hpp"

namespace attnjit::driver {

// X(function as cuda.h spells it, ABI version). The version is the CUDA release whose ABI of the
// function cuda.h declares (cudaTypedefs.h: PFN_<function>_v<version>), and is what
// cuGetProcAddress is asked for. Note: a table entry never means "the newest": CUDA 13.0's
// cuGetProcAddress("cuCtxSynchronize", 13000) returns cuCtxSynchronize_v2(CUcontext), while
// cuda.h's cuCtxSynchronize takes no argument; pinning the version per function (as nvFuser and
// TransformerEngine do) keeps the pointer's ABI equal to the header's. cuda_driver.cpp checks at
// compile time that PFN_<function>_v<version> is the type cuda.h declares for the function.
//
// The first column goes through cuda.h's macros (cuMemAlloc -> cuMemAlloc_v2) both here and at
// call sites, so member names always agree with the header; the macro-expanded name is also the
// exported symbol that dlsym falls back to when the driver has no cuGetProcAddress.
#define ATTNJIT_CUDA_DRIVER_FUNCTIONS(X)               \
  X(cuInit, 2000)                                      \
  X(cuDriverGetVersion, 2020)                          \
  X(cuGetErrorName, 6000)                              \
  X(cuGetErrorString, 6000)                            \
  X(cuDeviceGet, 2000)                                 \
  X(cuDeviceGetCount, 2000)                            \
  X(cuDeviceGetAttribute, 2000)                        \
  X(cuDeviceGetName, 2000)                             \
  X(cuDevicePrimaryCtxRetain, 7000)                    \
  X(cuDevicePrimaryCtxRelease, 11000)                  \
  X(cuCtxGetCurrent, 4000)                             \
  X(cuCtxSetCurrent, 4000)                             \
  X(cuCtxGetDevice, 2000)                              \
  X(cuCtxGetId, 12000)                                 \
  X(cuCtxSynchronize, 2000)                            \
  X(cuModuleLoadData, 2000)                            \
  X(cuModuleUnload, 2000)                              \
  X(cuModuleGetFunction, 2000)                         \
  X(cuModuleGetGlobal, 3020)                           \
  X(cuFuncSetAttribute, 9000)                          \
  X(cuFuncGetAttribute, 2020)                          \
  X(cuFuncGetParamInfo, 12040)                         \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050) \
  X(cuLaunchKernel, 4000)                              \
  X(cuLaunchKernelEx, 11060)                           \
  X(cuPointerGetAttribute, 4000)                       \
  X(cuPointerGetAttributes, 7000)                      \
  X(cuMemAlloc, 3020)                                  \
  X(cuMemFree, 3020)                                   \
  X(cuMemAllocManaged, 6000)                           \
  X(cuMemHostAlloc, 2020)                              \
  X(cuMemFreeHost, 2000)                               \
  X(cuMemHostGetDevicePointer, 3020)                   \
  X(cuMemAllocAsync, 11020)                            \
  X(cuMemFreeAsync, 11020)                             \
  X(cuMemcpyHtoD, 3020)                                \
  X(cuMemcpyDtoH, 3020)                                \
  X(cuMemcpyHtoDAsync, 3020)                           \
  X(cuMemcpyDtoHAsync, 3020)                           \
  X(cuMemsetD32, 3020)                                 \
  X(cuMemsetD32Async, 3020)                            \
  X(cuStreamCreate, 2000)                              \
  X(cuStreamDestroy, 4000)                             \
  X(cuStreamSynchronize, 2000)                         \
  X(cuStreamIsCapturing, 10000)                        \
  X(cuEventCreate, 2000)                               \
  X(cuEventRecord, 2000)                               \
  X(cuEventSynchronize, 2000)                          \
  X(cuEventElapsedTime, 12080)                         \
  X(cuEventDestroy, 4000)                              \
  X(cuTensorMapEncodeTiled, 12000)

struct DriverApi {
#define ATTNJIT_DECLARE_DRIVER_FUNCTION(name, version) PFN_##name##_v##version name = nullptr;
  ATTNJIT_CUDA_DRIVER_FUNCTIONS(ATTNJIT_DECLARE_DRIVER_FUNCTION)
#undef ATTNJIT_DECLARE_DRIVER_FUNCTION
  std::string library_path;            // as passed to dlopen
  int driver_version = 0;              // cuDriverGetVersion: 13000 for CUDA 13.0
  bool used_get_proc_address = false;  // false: every entry came from dlsym
};

// The default library name, or $ATTNJIT_CUDA_DRIVER when set and non-empty.
std::string driver_library_path();

// Loads the driver from `path`, resolves the table and calls cuInit(0); a new table on each call
// (the library handle itself stays open for the life of the process). Throws
// Error(Status::no_device) when the library cannot be opened, lacks cuInit, or cuInit fails.
std::shared_ptr<const DriverApi> load_driver(const std::string& path);

// The process's driver: loaded once, thread-safe, from driver_library_path(). A failure is
// remembered and thrown again, with the same status and message, on every later call.
const DriverApi& api();

// True when api() succeeds; never throws.
bool driver_available();

// How loading the process driver went, for callers that must tell "no driver / no device here"
// (skip) from "a driver that is broken" (fail): library_found is false when dlopen failed or the
// library lacks cuInit; init_result is cuInit's result otherwise (CUDA_SUCCESS when loaded).
struct DriverLoadState {
  bool library_found = false;
  CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
};
DriverLoadState driver_load_state();

// Error text for a CUresult: "CUDA_ERROR_OUT_OF_MEMORY: out of memory".
std::string describe_result(CUresult result);

// Status for a failed CUresult: out_of_memory, no_device (no device, driver too old...) or cuda.
Status status_for_result(CUresult result);

// For the errors of a stream capture (CUDA_ERROR_STREAM_CAPTURE_*): what to do, starting with
// "; " (a call made while a stream captures into a graph loaded its kernel, or synchronised);
// "" for any other result.
std::string capture_hint(CUresult result);

// Throws Error(status_for_result(r), "<call> failed: CUDA_ERROR_...: ...[capture_hint]").
[[noreturn]] void throw_result(CUresult result, const char* call);

// Throws Error(Status::cuda, "the CUDA driver does not export <name>; ...").
[[noreturn]] void throw_missing_symbol(const char* name);

inline void check(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) throw_result(result, call);
}

template <typename Function, typename... Args>
void call_checked(Function function, const char* name, Args... args) {
  if (function == nullptr) throw_missing_symbol(name);
  check(function(args...), name);
}

}  // namespace attnjit::driver

// ATTNJIT_CU(cuMemAlloc, &ptr, bytes): calls the driver, throws attnjit::Error on failure with
// the function's name in the message.
#define ATTNJIT_CU(function, ...)                                    \
  ::attnjit::driver::call_checked(::attnjit::driver::api().function, \
                                  #function __VA_OPT__(, ) __VA_ARGS__)
