// Entry point of test_gpu: runs the [gpu] tests only when a CUDA driver and a device of compute
// capability 8.0 or newer are present; otherwise exits with 77, which CTest reports as skipped.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>

#include "common/error.hpp"
#include "driver/cuda_driver.hpp"
#include "runtime/cuda_backend.hpp"

namespace {
constexpr int kSkipped = 77;
}

int main(int argc, char** argv) {
  if (!attnjit::driver::driver_available()) {
    std::printf("SKIPPED: no CUDA driver (libcuda.so.1 not found)\n");
    return kSkipped;
  }
  try {
    const attnjit::cuda::DeviceInfo device = attnjit::cuda::current_device();
    std::printf("test_gpu: %s (sm_%d, %d SMs, %d bytes of opt-in shared memory)\n",
                device.name.c_str(), device.sm, device.multiprocessors, device.smem_optin_bytes);
  } catch (const attnjit::Error& error) {
    std::printf("SKIPPED: no CUDA device (%s)\n", error.what());
    return kSkipped;
  }
  return Catch::Session().run(argc, argv);
}
