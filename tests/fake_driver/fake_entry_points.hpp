// The fake libcuda's entry points, resolved as the backend resolves every one of them: dlopen
// of ATTNJIT_FAKE_DEVICE_PATH (the build's libattnjit_fake_device.so), then cuGetProcAddress.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <catch2/catch.hpp>

namespace attnjit::fake_driver {

inline void* fake_library() {
  static void* handle = dlopen(ATTNJIT_FAKE_DEVICE_PATH, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  return handle;
}

template <typename Function>
Function resolve(const char* name) {
  const auto get_proc_address =
      reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(fake_library(), "cuGetProcAddress_v2"));
  REQUIRE(get_proc_address != nullptr);
  void* function = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  REQUIRE(get_proc_address(name, &function, 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) ==
          CUDA_SUCCESS);
  REQUIRE(found == CU_GET_PROC_ADDRESS_SUCCESS);
  REQUIRE(function != nullptr);
  return reinterpret_cast<Function>(function);
}

}  // namespace attnjit::fake_driver
