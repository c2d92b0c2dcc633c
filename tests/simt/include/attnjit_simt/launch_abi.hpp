// The boundary between a test and a shared object built from generated kernel sources under the
// SIMT emulator: plain C entry points and structs, so the two sides need no shared state.
#pragma once

#include <cstddef>

extern "C" {

// A range of host memory standing in for device memory: cp.async may read it, and the kernels'
// plain global stores may write it when `writable` is set. Anything else is an error.
struct SimtRegion {
  const void* data;
  std::size_t bytes;
  int writable;
};

// Arguments of the tensor-summary entry point, in its parameter order.
struct SimtSummaryArgs {
  const int* data;
  int len;
  int index_len;
  int granularity;
  int* out_min;
  int* out_max;
};

struct SimtLaunch {
  unsigned grid_x, grid_y;
  unsigned threads;     // per block
  unsigned smem_bytes;  // dynamic shared memory per block
  const SimtRegion* regions;
  int num_regions;
  int programmatic;  // launched to overlap the kernel before it (grid_dependency.cuh)
  // When set, receives the most barriers one block of the grid completed: __syncthreads (plain
  // or _or) and completed named barriers (bar.sync with an id) alike, the tests' measure of a
  // block's synchronisation steps (tile classification has two).
  unsigned* max_block_barriers;
};

// Run a forward entry point (void(attnjit::FwdParams), or void(attnjit::Sm90FwdParams) through
// attnjit_simt_run_forward_sm90, or the split-KV merge void(attnjit::SplitCombineParams) through
// attnjit_simt_run_combine) or a summary entry point over the whole grid. Return 0, or 1 with
// the first error (place and reason) in `error`.
typedef int (*SimtRunForward)(const void* entry, const void* params, const SimtLaunch* launch,
                              char* error, std::size_t error_size);
typedef int (*SimtRunSummary)(const void* entry, const SimtSummaryArgs* args,
                              const SimtLaunch* launch, char* error, std::size_t error_size);

}  // extern "C"
