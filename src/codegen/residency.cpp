#include "codegen/residency.hpp"

#include <algorithm>

namespace attnjit::codegen {
namespace {

constexpr int kRegistersPerSm = 64 * 1024;
constexpr int kRegisterAllocationUnit = 256;  // registers, per warp

// Threads and blocks one SM holds (CUDA C++ Programming Guide, "Compute Capabilities").
constexpr int max_threads_per_sm(int sm) { return sm == 86 || sm == 89 || sm == 120 ? 1536 : 2048; }
constexpr int max_blocks_per_sm(int sm) {
  if (sm == 86) return 16;
  if (sm == 89) return 24;
  return 32;
}

}  // namespace

Residency resident_blocks(int sm, int threads, int registers, int smem_bytes) {
  Residency residency;
  if (threads <= 0 || registers <= 0 || smem_bytes < 0) return residency;
  const int warps = (threads + 31) / 32;
  const int warp_registers = (registers * 32 + kRegisterAllocationUnit - 1) /
                             kRegisterAllocationUnit * kRegisterAllocationUnit;
  residency.by_registers = kRegistersPerSm / warp_registers / warps;
  residency.by_shared_memory = blocks_by_shared_memory(sm, smem_bytes);
  residency.by_threads = max_threads_per_sm(sm) / threads;
  residency.blocks = std::min({residency.by_registers, residency.by_shared_memory,
                               residency.by_threads, max_blocks_per_sm(sm)});
  return residency;
}

}  // namespace attnjit::codegen
