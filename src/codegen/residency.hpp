// What one SM of an SM80+ arch holds, and how many blocks of a compiled kernel it can keep
// resident at once: the check behind a kernel's blocks-per-SM promise (__launch_bounds__'s second
// argument), made from ptxas's register count without a GPU. The runtime asks the driver the same
// question on a real device (cuOccupancyMaxActiveBlocksPerMultiprocessor).
#pragma once

namespace attnjit::codegen {

// Per-block opt-in limit of dynamic shared memory (cudaDevAttrMaxSharedMemoryPerBlockOptin).
constexpr int shared_memory_limit(int sm) {
  switch (sm) {
    case 80:
    case 87:
      return 163 * 1024;
    case 90:
    case 100:
      return 227 * 1024;
    default:  // 86, 89, 120 and anything unknown: the smallest SM80+ limit
      return 99 * 1024;
  }
}

// Shared memory of one SM, which the resident blocks share, each also reserving 1 KB: on every
// SM80+ part it is the per-block limit plus that 1 KB (164, 228, 100 KB).
constexpr int kReservedSmemPerBlock = 1024;
constexpr int shared_memory_per_sm(int sm) {
  return shared_memory_limit(sm) + kReservedSmemPerBlock;
}

// Blocks of `smem_bytes` of dynamic shared memory one SM of `sm` holds (0: one block may not have
// that much).
constexpr int blocks_by_shared_memory(int sm, int smem_bytes) {
  return smem_bytes > shared_memory_limit(sm)
             ? 0
             : shared_memory_per_sm(sm) / (smem_bytes + kReservedSmemPerBlock);
}

// Resident blocks of one kernel on one SM, and what limits each count.
struct Residency {
  int blocks = 0;        // the smallest of the three below and the arch's block limit
  int by_registers = 0;  // 64K registers, allocated per warp in units of 256
  int by_shared_memory = 0;
  int by_threads = 0;
};

// `registers` per thread as ptxas reports them, `smem_bytes` of dynamic shared memory a block.
Residency resident_blocks(int sm, int threads, int registers, int smem_bytes);

}  // namespace attnjit::codegen
