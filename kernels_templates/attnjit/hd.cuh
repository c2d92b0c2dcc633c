// Shared between the host library (g++) and kernels compiled by NVRTC: the same source defines
// the semantics on both sides, so the CPU reference and the GPU kernels agree by construction.
// Note: nothing here may include a toolkit or standard header when compiled by NVRTC, so that a
// deployed host needs only libnvrtc and the driver.
#pragma once

//
// Three ways this code is compiled:
//   ATTNJIT_DEVICE_COMPILE  NVRTC or nvcc: the kernels, with their PTX primitives.
//   ATTNJIT_KERNEL_CODE     the kernels' C++ bodies are compiled: on the device, or on the host
//                           under the SIMT emulator of tests/simt (ATTNJIT_SIMT_EMULATION), which
//                           supplies the primitives (ldmatrix, mma, cp.async, shuffles, barriers)
//                           and runs every thread of a block as a fiber.
//   neither                 the host library: only the shared host/device functions.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define ATTNJIT_DEVICE_COMPILE 1
#define ATTNJIT_KERNEL_CODE 1
#define ATTNJIT_HD __host__ __device__ __forceinline__
#define ATTNJIT_DEVICE __device__ __forceinline__
#elif defined(ATTNJIT_SIMT_EMULATION)
#define ATTNJIT_DEVICE_COMPILE 0
#define ATTNJIT_KERNEL_CODE 1
#define ATTNJIT_HD inline
#define ATTNJIT_DEVICE inline
#else
#define ATTNJIT_DEVICE_COMPILE 0
#define ATTNJIT_KERNEL_CODE 0
#define ATTNJIT_HD inline
#endif
