// Entry point of test_gpu: runs the [gpu] tests only when a CUDA driver and a device of compute
// capability 8.0 or newer are present; otherwise exits with 77, which CTest reports as skipped.
// A driver that is present but broken (cuInit failing with anything but "no device", a context
// that cannot be created) is a failure, exit 1, never a skip.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>

#include "common/error.hpp"
#include "driver/cuda_driver.hpp"
#include "runtime/cuda_backend.hpp"

namespace {
constexpr int kSkipped = 77;
constexpr int kBroken = 1;
}  // namespace

int main(int argc, char** argv) {
  if (!attnjit::driver::driver_available()) {
    const attnjit::driver::DriverLoadState state = attnjit::driver::driver_load_state();
    std::string reason;
    try {
      attnjit::driver::api();
    } catch (const attnjit::Error& error) {
      reason = error.what();
    }
    // Note: the toolkit's stub libcuda (CUDA_ERROR_STUB_LIBRARY) is "no driver" as well.
    if (!state.library_found || state.init_result == CUDA_ERROR_NO_DEVICE ||
        state.init_result == CUDA_ERROR_STUB_LIBRARY) {
      std::printf("SKIPPED: no CUDA driver or no device (%s)\n", reason.c_str());
      return kSkipped;
    }
    std::printf("FAILED: the CUDA driver is present but unusable: %s\n", reason.c_str());
    return kBroken;
  }
  try {
    const attnjit::cuda::DeviceInfo device = attnjit::cuda::current_device();
    std::printf("test_gpu: %s (sm_%d, %d SMs, %d bytes of opt-in shared memory), driver %d\n",
                device.name.c_str(), device.sm, device.multiprocessors, device.smem_optin_bytes,
                attnjit::driver::api().driver_version);
  } catch (const attnjit::Error& error) {
    if (error.status() == attnjit::Status::no_device ||
        error.status() == attnjit::Status::unsupported) {
      std::printf("SKIPPED: no usable CUDA device (%s)\n", error.what());
      return kSkipped;
    }
    std::printf("FAILED: the CUDA device cannot be used: %s (%s)\n", error.what(),
                attnjit::status_name(error.status()));
    return kBroken;
  }
  const int result = Catch::Session().run(argc, argv);
  // Note: frees the workspaces and unloads the modules before exit, so compute-sanitizer's leak
  // check sees nothing of attnjit's still allocated.
  attnjit::cuda::release_resources();
  return result;
}
