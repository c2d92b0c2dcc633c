// Included first by every shared object the SIMT tests build from generated kernel sources
// (tests/simt/simt_module.cpp): switches kernels_templates/ to host emulation, supplies the
// primitives, includes the kernel templates and exports the launchers of launch_abi.hpp.
#pragma once

#define ATTNJIT_SIMT_EMULATION 1

#include "attnjit/hd.cuh"
#include "attnjit_simt/primitives.hpp"
#include "attnjit_simt/hopper_barrier.hpp"
#include "attnjit_simt/hopper_tma.hpp"
#include "attnjit_simt/hopper_wgmma.hpp"
// The kernel templates, after the primitives they call (plain unqualified calls with
// non-class arguments are looked up where the template is defined).
#include "attnjit/attention_fwd.cuh"
#include "attnjit/attention_fwd_sm90.cuh"
#include "attnjit/expr_ops.cuh"
#include "attnjit/split_combine.cuh"
#include "attnjit/tensor_summary.cuh"

namespace attnjit::simt {

inline void on_block_start() { hopper().reset(emulator().warps.size()); }

inline void on_block_end() { check_named_barriers_at_block_end(); }

inline void on_thread_exit(ThreadState& t) {
  check_wgmma_at_exit(t);
  for (const std::vector<CopyOp>& group : t.in_flight) {
    if (!group.empty()) fail("exited with %zu cp.async copies never waited for", group.size());
  }
  if (!t.open_group.empty()) {
    fail("exited with %zu cp.async copies never committed", t.open_group.size());
  }
}

// Runs `body` for every thread of every block of the grid (blocks one after another, in
// launch order). Returns 0, or 1 with the first error.
inline int run_grid(const SimtLaunch& launch, std::function<void()> body, char* error,
                    std::size_t error_size) {
  Emulator& e = emulator();
  if (launch.threads == 0 || launch.threads % 32 != 0) {
    std::snprintf(error, error_size, "block of %u threads: not whole warps", launch.threads);
    return 1;
  }
  e.grid = Dim3{launch.grid_x, launch.grid_y, 1};
  e.block_dim = Dim3{launch.threads, 1, 1};
  e.regions.assign(launch.regions, launch.regions + launch.num_regions);
  e.programmatic = launch.programmatic != 0;
  e.body = std::move(body);
  e.failed = false;
  e.error.clear();
  const int num_warps = static_cast<int>(launch.threads / 32);
  e.smem = std::make_unique<SharedMemory>(launch.smem_bytes, num_warps);
  e.threads.resize(launch.threads);
  e.warps.assign(num_warps, WarpState{});
  for (unsigned i = 0; i < launch.threads; ++i) {
    ThreadState& t = e.threads[i];
    if (!t.stack) t.stack = std::make_unique<char[]>(kFiberStackBytes);
    t.tid = static_cast<int>(i);
    t.warp = t.tid / 32;
    t.lane = t.tid % 32;
  }
  for (unsigned y = 0; y < launch.grid_y && !e.failed; ++y) {
    for (unsigned x = 0; x < launch.grid_x && !e.failed; ++x) {
      e.smem->reset();
      run_block(Dim3{x, y, 1});
      if (launch.max_block_barriers != nullptr && e.block_epoch > *launch.max_block_barriers) {
        *launch.max_block_barriers = e.block_epoch;
      }
    }
  }
  e.body = nullptr;
  e.regions.clear();
  if (e.failed) {
    std::snprintf(error, error_size, "%s", e.error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace attnjit::simt

extern "C" __attribute__((visibility("default"))) int attnjit_simt_run_forward(
    const void* entry, const void* params, const SimtLaunch* launch, char* error,
    std::size_t error_size) {
  const auto kernel = reinterpret_cast<void (*)(attnjit::FwdParams)>(const_cast<void*>(entry));
  const auto& p = *static_cast<const attnjit::FwdParams*>(params);
  return attnjit::simt::run_grid(*launch, [&] { kernel(p); }, error, error_size);
}

extern "C" __attribute__((visibility("default"))) int attnjit_simt_run_forward_sm90(
    const void* entry, const void* params, const SimtLaunch* launch, char* error,
    std::size_t error_size) {
  const auto kernel =
      reinterpret_cast<void (*)(attnjit::Sm90FwdParams)>(const_cast<void*>(entry));
  const auto& p = *static_cast<const attnjit::Sm90FwdParams*>(params);
  return attnjit::simt::run_grid(*launch, [&] { kernel(p); }, error, error_size);
}

extern "C" __attribute__((visibility("default"))) int attnjit_simt_run_combine(
    const void* entry, const void* params, const SimtLaunch* launch, char* error,
    std::size_t error_size) {
  const auto kernel =
      reinterpret_cast<void (*)(attnjit::SplitCombineParams)>(const_cast<void*>(entry));
  const auto& p = *static_cast<const attnjit::SplitCombineParams*>(params);
  return attnjit::simt::run_grid(*launch, [&] { kernel(p); }, error, error_size);
}

extern "C" __attribute__((visibility("default"))) int attnjit_simt_run_summary(
    const void* entry, const SimtSummaryArgs* args, const SimtLaunch* launch, char* error,
    std::size_t error_size) {
  const auto kernel = reinterpret_cast<void (*)(const int*, int, int, int, int*, int*)>(
      const_cast<void*>(entry));
  return attnjit::simt::run_grid(
      *launch,
      [&] {
        kernel(args->data, args->len, args->index_len, args->granularity, args->out_min,
               args->out_max);
      },
      error, error_size);
}
