// Shared between the host library (g++) and kernels compiled by NVRTC: the same source defines
// the semantics on both sides, so the CPU reference and the GPU kernels agree by construction.
// Note: nothing here may include a toolkit or standard header when compiled by NVRTC, so that a
// deployed host needs only libnvrtc and the driver.
#pragma once

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define ATTNJIT_DEVICE_COMPILE 1
#define ATTNJIT_HD __host__ __device__ __forceinline__
#define ATTNJIT_DEVICE __device__ __forceinline__
#else
#define ATTNJIT_DEVICE_COMPILE 0
#define ATTNJIT_HD inline
#endif
