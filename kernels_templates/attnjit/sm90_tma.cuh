// Hopper TMA (the Tensor Memory Accelerator): tiled bulk tensor loads global -> shared memory,
// described by a tensor map the host encodes with cuTensorMapEncodeTiled and passes to the kernel
// (as a __grid_constant__ parameter or in global memory).
//
// Every attnjit tensor map has 16-bit elements, 4 dimensions {head_dim, len, heads, batch} (the
// innermost first; a packed GQA launch's Q has 5: tma_load_5d), box {64, BOX_ROWS, 1, 1},
// CU_TENSOR_MAP_SWIZZLE_128B, no interleave and zero fill out of range. One box therefore lands as
// a dense [BOX_ROWS][64] block of 128-byte rows with the 16-byte chunk c of row r at chunk position
// c ^ (r & 7) (PTX ISA, "Tensor Access Modes: Tiled mode" and "Tensor-copy swizzling modes": the
// 128B mode XORs address bits [4:6] with bits [7:9]) -- exactly one swizzle block of
// SwizzledTile<ROWS, HEAD_DIM> (copy.cuh) with HEAD_DIM % 64 == 0. A tile of head dim D is D / 64
// boxes, box j at byte offset j * BOX_ROWS * 128. The destination must be 1024-byte aligned (one
// full swizzle pattern: 8 rows of 128 bytes).
// Note: the SIMT emulator (tests/simt/include/attnjit_simt/hopper_tma.hpp) implements the load for
// host runs from the fake driver's encoding of the map.
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

// The 128-byte opaque CUtensorMap, 64-byte aligned as the driver requires.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

#if ATTNJIT_DEVICE_COMPILE

// Pulls the map into the descriptor cache ahead of the first load (prefetch.tensormap).
ATTNJIT_DEVICE void tma_prefetch_descriptor(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map))
               : "memory");
}

// Loads the box at element coordinates (c0: head-dim column, c1: row, c2: head, c3: batch) into
// shared memory at `smem_dst` and completes the box's byte count as transactions on the mbarrier
// at `bar` (cp.async.bulk.tensor, PTX ISA "Data Movement: cp.async.bulk.tensor"). Elements outside
// the tensor are written as zeros and still count as transferred bytes.
ATTNJIT_DEVICE void tma_load_4d(const TensorMap* map, unsigned bar, unsigned smem_dst, int c0,
                                int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(smem_dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// The same for a 5-d map (a packed GQA launch's Q: {head_dim, query heads of a group, groups,
// queries, batch}; forward_plan.hpp, TensorMapRequest).
ATTNJIT_DEVICE void tma_load_5d(const TensorMap* map, unsigned bar, unsigned smem_dst, int c0,
                                int c1, int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n" ::"r"(smem_dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
      "r"(c4)
      : "memory");
}

#endif  // ATTNJIT_DEVICE_COMPILE

}  // namespace attnjit
