// Generated kernel sources compiled with the host C++ compiler into one shared object under the
// SIMT emulator (include/attnjit_simt/emulator.hpp), loaded with dlopen, and launched on host
// memory. Kernel i of the sources gets entry points attnjit_fwd_i and attnjit_tensor_summary_i.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "attnjit/fwd_params.cuh"
#include "attnjit/sm90_fwd_params.cuh"
#include "attnjit_simt/launch_abi.hpp"
#include "runtime/forward_plan.hpp"

namespace attnjit::simt {

class SimtModule {
 public:
  // Builds in `work_dir`, which the module owns and removes when destroyed. Throws
  // std::runtime_error with the compiler's output when the build fails.
  SimtModule(const std::vector<std::string>& sources, const std::filesystem::path& work_dir);
  ~SimtModule();
  SimtModule(const SimtModule&) = delete;
  SimtModule& operator=(const SimtModule&) = delete;

  const void* symbol(const std::string& name) const;  // throws when absent
  const void* forward_entry(int kernel) const;
  const void* summary_entry(int kernel) const;
  const void* combine_entry(int kernel) const;  // sm80-family kernels only
  const void* decode_entry(int kernel) const;   // sm80-family kernels with decoding features

  // Run a whole grid; throw std::runtime_error with the emulator's first error (block, thread,
  // reason). `programmatic`: the launch overlaps the kernel before it (grid_dependency.cuh), so
  // a read of that kernel's results before griddepcontrol.wait is an error. The sm80 forward
  // returns the most barriers one of its blocks completed.
  unsigned run_forward(const void* entry, const FwdParams& params, const LaunchGrid& grid,
                       std::span<const SimtRegion> regions, bool programmatic = false) const;
  void run_forward(const void* entry, const Sm90FwdParams& params, const LaunchGrid& grid,
                   std::span<const SimtRegion> regions, bool programmatic = false) const;
  void run_summary(const void* entry, const SimtSummaryArgs& args, const LaunchGrid& grid,
                   std::span<const SimtRegion> regions, bool programmatic = false) const;
  void run_combine(const void* entry, const SplitCombineParams& params, const LaunchGrid& grid,
                   std::span<const SimtRegion> regions, bool programmatic = false) const;

  // A launch as cuLaunchKernel receives it: entry point `function` ("attnjit_fwd",
  // "attnjit_fwd_decode", "attnjit_tensor_summary" or "attnjit_split_combine") of kernel
  // `kernel`, with kernelParams `params` (the forward entry's parameter block is Sm90FwdParams
  // when the kernel's source is of the sm90 family).
  void run_launch(int kernel, const char* function, const LaunchGrid& grid, void** params,
                  std::span<const SimtRegion> regions, bool programmatic = false) const;

 private:
  std::filesystem::path work_dir_;
  void* handle_ = nullptr;
  std::vector<bool> sm90_;  // per kernel: its forward entry takes Sm90FwdParams
  SimtRunForward run_forward_ = nullptr;
  SimtRunForward run_forward_sm90_ = nullptr;
  SimtRunSummary run_summary_ = nullptr;
  SimtRunForward run_combine_ = nullptr;
};

}  // namespace attnjit::simt
