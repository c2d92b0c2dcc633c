// The fake libcuda's launches (tests/fake_driver), run under the SIMT emulator: the tests name
// the emulated module and kernel that stand for what the backend loaded, and the device records
// every launch (entry, grid, programmatic or not, carveout) for the tests to check.
#pragma once

#include <cuda.h>

#include <optional>
#include <string>
#include <vector>

#include "attnjit/sm90_watchdog_record.cuh"
#include "fake_cuda.h"
#include "runtime/forward_plan.hpp"
#include "simt_module.hpp"

namespace attnjit::dispatch_test {

class EmulatedDevice {
 public:
  EmulatedDevice();
  ~EmulatedDevice();
  EmulatedDevice(const EmulatedDevice&) = delete;
  EmulatedDevice& operator=(const EmulatedDevice&) = delete;

  // Runs the fake driver's launches with kernel `kernel` of `module` (null: none expected).
  void use(const simt::SimtModule* module, int kernel) {
    module_ = module;
    kernel_ = kernel;
    error_.clear();
  }
  const std::string& error() const { return error_; }
  // The grids of the forward launches so far (either entry), oldest first, and their entries.
  const std::vector<LaunchGrid>& forward_grids() const { return forward_grids_; }
  const std::vector<std::string>& forward_entries() const { return forward_entries_; }
  // Every launch so far (any entry), oldest first: its entry and whether it was programmatic.
  struct LaunchRecord {
    std::string function;
    bool programmatic = false;
    int carveout = CU_SHAREDMEM_CARVEOUT_DEFAULT;  // the function's preference at the launch
  };
  const std::vector<LaunchRecord>& launches() const { return launches_; }
  int launch_count() const { return launch_count_(); }
  int module_load_count() const { return module_load_count_(); }  // cuModuleLoadData successes
  int param_info_past_end() const { return param_info_past_end_(); }
  // Where the loaded watchdog kernel's record pointer lives (its module global), or null.
  Sm90WatchdogRecord** watchdog_global() const {
    return static_cast<Sm90WatchdogRecord**>(module_global_(ATTNJIT_SM90_WATCHDOG_SYMBOL_NAME));
  }
  // The next forward launch does what an expired watchdog wait does on the hardware: it fills
  // the record the kernel's global points at, and the launch fails.
  void expire_watchdog_at_next_forward(const Sm90WatchdogRecord& record) { expiry_ = record; }

 private:
  static int launch(const AttnjitFakeLaunch* launch, void* user);
  void run(const AttnjitFakeLaunch& launch);

  AttnjitFakeSetLauncher set_launcher_ = nullptr;
  AttnjitFakeAllocations allocations_ = nullptr;
  AttnjitFakeLaunchCount launch_count_ = nullptr;
  AttnjitFakeLaunchCount module_load_count_ = nullptr;
  AttnjitFakeParamInfoPastEnd param_info_past_end_ = nullptr;
  AttnjitFakeModuleGlobal module_global_ = nullptr;
  std::optional<Sm90WatchdogRecord> expiry_;
  const simt::SimtModule* module_ = nullptr;
  int kernel_ = 0;
  std::string error_;
  std::vector<LaunchGrid> forward_grids_;
  std::vector<std::string> forward_entries_;
  std::vector<LaunchRecord> launches_;
};

// The process's one emulated device (the fake driver has one launcher).
EmulatedDevice& device();

}  // namespace attnjit::dispatch_test
