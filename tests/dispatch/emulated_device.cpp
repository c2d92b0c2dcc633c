#include "emulated_device.hpp"

#include <dlfcn.h>

#include <stdexcept>

#include "codegen/variant_source.hpp"
#include "driver/cuda_driver.hpp"

namespace attnjit::dispatch_test {

EmulatedDevice::EmulatedDevice() {
  // Note: the same path the backend dlopens, so the same (already loaded) library.
  void* handle = dlopen(driver::driver_library_path().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw std::runtime_error("cannot load the fake CUDA driver");
  set_launcher_ =
      reinterpret_cast<AttnjitFakeSetLauncher>(dlsym(handle, "attnjit_fake_cuda_set_launcher"));
  allocations_ =
      reinterpret_cast<AttnjitFakeAllocations>(dlsym(handle, "attnjit_fake_cuda_allocations"));
  launch_count_ =
      reinterpret_cast<AttnjitFakeLaunchCount>(dlsym(handle, "attnjit_fake_cuda_launch_count"));
  module_load_count_ = reinterpret_cast<AttnjitFakeLaunchCount>(
      dlsym(handle, "attnjit_fake_cuda_module_load_count"));
  param_info_past_end_ = reinterpret_cast<AttnjitFakeParamInfoPastEnd>(
      dlsym(handle, "attnjit_fake_cuda_param_info_past_end"));
  module_global_ =
      reinterpret_cast<AttnjitFakeModuleGlobal>(dlsym(handle, "attnjit_fake_cuda_module_global"));
  if (set_launcher_ == nullptr || allocations_ == nullptr || launch_count_ == nullptr ||
      module_load_count_ == nullptr || param_info_past_end_ == nullptr ||
      module_global_ == nullptr) {
    throw std::runtime_error(driver::driver_library_path() + " is not the fake CUDA driver");
  }
  set_launcher_(&EmulatedDevice::launch, this);
}

EmulatedDevice::~EmulatedDevice() { set_launcher_(nullptr, nullptr); }

int EmulatedDevice::launch(const AttnjitFakeLaunch* launch, void* user) {
  auto& self = *static_cast<EmulatedDevice*>(user);
  try {
    self.run(*launch);
    return 0;
  } catch (const std::exception& error) {
    self.error_ = error.what();
    return 1;
  }
}

void EmulatedDevice::run(const AttnjitFakeLaunch& launch) {
  if (module_ == nullptr) throw std::runtime_error("a launch with no emulated module in use");
  // Every live allocation of the fake is "device memory" the kernels may read and write.
  std::vector<AttnjitFakeRange> ranges(static_cast<std::size_t>(allocations_(nullptr, 0)));
  allocations_(ranges.data(), static_cast<int>(ranges.size()));
  std::vector<SimtRegion> regions;
  for (const AttnjitFakeRange& range : ranges) regions.push_back({range.data, range.bytes, 1});
  LaunchGrid grid;
  grid.grid_x = launch.grid_x;
  grid.grid_y = launch.grid_y;
  grid.threads = launch.threads;
  grid.smem_bytes = launch.smem_bytes;
  launches_.push_back({launch.function, launch.programmatic != 0, launch.carveout});
  if (std::string(launch.function) == codegen::kDecodeEntry) {
    forward_grids_.push_back(grid);
    forward_entries_.push_back(launch.function);
  }
  if (std::string(launch.function) == codegen::kForwardEntry) {
    forward_grids_.push_back(grid);
    forward_entries_.push_back(launch.function);
    if (expiry_) {
      Sm90WatchdogRecord** global = watchdog_global();
      if (global == nullptr || *global == nullptr) {
        throw std::runtime_error("the watchdog kernel's record pointer was never set");
      }
      **global = *expiry_;
      expiry_.reset();
      throw std::runtime_error("the watchdog faulted the kernel");
    }
  }
  module_->run_launch(kernel_, launch.function, grid, launch.params, regions,
                      launch.programmatic != 0);
}

EmulatedDevice& device() {
  static EmulatedDevice instance;
  return instance;
}

}  // namespace attnjit::dispatch_test
