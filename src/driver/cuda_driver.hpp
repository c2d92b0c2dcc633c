// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"), never linked, so the
// library loads and runs its CPU paths on machines without an NVIDIA driver.
//
// Every function attnjit calls is declared once in ATTNJIT_CUDA_DRIVER_FUNCTIONS with the
// exported symbol it resolves to (the versioned ABI name that cuda.h's macros select). A symbol
// the installed driver lacks stays null; calling it throws Error(Status::cuda), it never crashes.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "common/error.hpp"

namespace attnjit::driver {

// X(function as cuda.h spells it, exported symbol). Note: the first column goes through cuda.h's
// macros (cuMemAlloc -> cuMemAlloc_v2) both here and at call sites, so member names and types
// always agree with the header; the second column is what dlsym looks up.
#define ATTNJIT_CUDA_DRIVER_FUNCTIONS(X)                       \
  X(cuInit, "cuInit")                                          \
  X(cuDriverGetVersion, "cuDriverGetVersion")                  \
  X(cuGetErrorName, "cuGetErrorName")                          \
  X(cuGetErrorString, "cuGetErrorString")                      \
  X(cuDeviceGet, "cuDeviceGet")                                \
  X(cuDeviceGetCount, "cuDeviceGetCount")                      \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute")              \
  X(cuDeviceGetName, "cuDeviceGetName")                        \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")      \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") \
  X(cuCtxGetCurrent, "cuCtxGetCurrent")                        \
  X(cuCtxSetCurrent, "cuCtxSetCurrent")                        \
  X(cuCtxGetDevice, "cuCtxGetDevice")                          \
  X(cuCtxGetId, "cuCtxGetId")                                  \
  X(cuCtxSynchronize, "cuCtxSynchronize")                      \
  X(cuModuleLoadData, "cuModuleLoadData")                      \
  X(cuModuleUnload, "cuModuleUnload")                          \
  X(cuModuleGetFunction, "cuModuleGetFunction")                \
  X(cuFuncSetAttribute, "cuFuncSetAttribute")                  \
  X(cuFuncGetAttribute, "cuFuncGetAttribute")                  \
  X(cuLaunchKernel, "cuLaunchKernel")                          \
  X(cuPointerGetAttribute, "cuPointerGetAttribute")            \
  X(cuPointerGetAttributes, "cuPointerGetAttributes")          \
  X(cuMemAlloc, "cuMemAlloc_v2")                               \
  X(cuMemFree, "cuMemFree_v2")                                 \
  X(cuMemAllocAsync, "cuMemAllocAsync")                        \
  X(cuMemFreeAsync, "cuMemFreeAsync")                          \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2")                           \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2")                           \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")                 \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")                 \
  X(cuMemsetD32, "cuMemsetD32_v2")                             \
  X(cuMemsetD32Async, "cuMemsetD32Async")                      \
  X(cuStreamSynchronize, "cuStreamSynchronize")                \
  X(cuEventCreate, "cuEventCreate")                            \
  X(cuEventRecord, "cuEventRecord")                            \
  X(cuEventSynchronize, "cuEventSynchronize")                  \
  X(cuEventElapsedTime, "cuEventElapsedTime")                  \
  X(cuEventDestroy, "cuEventDestroy_v2")

struct DriverApi {
#define ATTNJIT_DECLARE_DRIVER_FUNCTION(name, symbol) decltype(&::name) name = nullptr;
  ATTNJIT_CUDA_DRIVER_FUNCTIONS(ATTNJIT_DECLARE_DRIVER_FUNCTION)
#undef ATTNJIT_DECLARE_DRIVER_FUNCTION
  std::string library_path;  // as passed to dlopen
  int driver_version = 0;    // cuDriverGetVersion: 13000 for CUDA 13.0
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

// Error text for a CUresult: "CUDA_ERROR_OUT_OF_MEMORY: out of memory".
std::string describe_result(CUresult result);

// Status for a failed CUresult: out_of_memory, no_device (no device, driver too old...) or cuda.
Status status_for_result(CUresult result);

// Throws Error(status_for_result(r), "<call> failed: CUDA_ERROR_...: ...").
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
