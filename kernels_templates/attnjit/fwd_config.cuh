// Shared-memory footprint of the forward kernel, used by the kernel itself and by the host's
// tile-configuration choice (codegen/kernel_config.cpp), so both agree on the launch size.
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

// Q tile [BLOCK_M][HEAD_DIM] plus NUM_STAGES pipeline stages of K and V tiles [BLOCK_N][HEAD_DIM],
// all of 16-bit elements. The output tile is staged in the Q tile's space.
ATTNJIT_HD constexpr int forward_smem_bytes(int head_dim, int block_m, int block_n,
                                            int num_stages) {
  return 2 * head_dim * (block_m + 2 * num_stages * block_n);
}

}  // namespace attnjit
