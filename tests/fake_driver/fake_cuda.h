/* The test-facing side of the fake libcuda (fake_cuda.cpp): what a launch looks like, and how a
   test installs the function that runs it. Plain C so either side can use it. */
#pragma once

#include <stddef.h>

#define ATTNJIT_FAKE_EXPORT __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char* function; /* "attnjit_fwd" or "attnjit_tensor_summary" */
  unsigned grid_x, grid_y;
  unsigned threads;
  unsigned smem_bytes;
  void** params; /* cuLaunchKernel's kernelParams */
  int programmatic; /* cuLaunchKernelEx with programmatic stream serialisation allowed */
  int carveout;     /* the function's CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT then */
} AttnjitFakeLaunch;

/* Runs a launch to completion; 0 on success. */
typedef int (*AttnjitFakeLauncher)(const AttnjitFakeLaunch* launch, void* user);

typedef struct {
  void* data;
  size_t bytes;
} AttnjitFakeRange;

typedef void (*AttnjitFakeSetLauncher)(AttnjitFakeLauncher launcher, void* user);
/* Writes up to `capacity` live allocations to `out`; returns how many there are. */
typedef int (*AttnjitFakeAllocations)(AttnjitFakeRange* out, int capacity);
/* attnjit_fake_cuda_launch_count: launches so far; attnjit_fake_cuda_programmatic_launch_count: of
   them, those made programmatic (AttnjitFakeLaunch::programmatic);
   attnjit_fake_cuda_module_load_count: modules loaded so far (cuModuleLoadData calls that
   succeeded). */
typedef int (*AttnjitFakeLaunchCount)(void);
/* attnjit_fake_cuda_param_info_past_end: cuFuncGetParamInfo calls for an index past the kernel's
   last parameter so far (each is a compute-sanitizer error on a real device). */
typedef int (*AttnjitFakeParamInfoPastEnd)(void);
/* attnjit_fake_cuda_module_global: the "device" address of the module global of that name that
   cuModuleGetGlobal handed out last (the watchdog record's pointer), or NULL. */
typedef void* (*AttnjitFakeModuleGlobal)(const char* name);

#ifdef __cplusplus
}
#endif
