// The Hopper forward kernel's single launch argument: the SM80 kernel's parameters plus the TMA
// tensor maps of Q, K and V, encoded by the host per call. Shared by host and device so the layout
// agrees.
#pragma once

#include "attnjit/fwd_params.cuh"
#include "attnjit/sm90_timeline.cuh"
#include "attnjit/sm90_tma.cuh"

namespace attnjit {

// Note: the kernel declares it `const __grid_constant__`, so the maps stay in the parameter space
// where TMA may read them (a by-value copy in local memory is not a valid tensor map address).
// Every map is 4-D {head_dim, len, heads, batch} with box {64, rows, 1, 1}, 128-byte swizzle and
// zero fill (sm90_tma.cuh); rows are the block_m for Q and the configuration's block_n for K, V.
struct Sm90FwdParams {
  FwdParams base;
  TensorMap q_map;
  TensorMap k_map;
  TensorMap v_map;
  // One record per block for a kernel compiled with the timeline (sm90_timeline.cuh), when the
  // host asked for one ($ATTNJIT_TIMELINE); otherwise null, and never read.
  Sm90TimelineRecord* timeline;
};

}  // namespace attnjit
