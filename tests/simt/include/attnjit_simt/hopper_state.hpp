// The per-block state of the emulated Hopper primitives: mbarriers (by shared offset), named
// barriers, and each warp's wgmma groups. Reset at the start of every block (on_block_start).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "attnjit_simt/scheduler.hpp"

namespace attnjit::simt {

// An mbarrier's state (PTX ISA, "mbarrier"): the state lives here rather than in its 8 shared
// bytes, whose hardware encoding is opaque.
struct Mbarrier {
  unsigned expected = 0;  // arrivals per phase, from mbarrier.init
  unsigned pending = 0;   // arrivals the current phase still needs
  // Transaction bytes the current phase still needs; below zero while a TMA completed bytes
  // before the matching expect_tx arrived (the hardware allows that order).
  long long tx = 0;
  unsigned phase = 0;  // phases completed so far
  int init_thread = -1;
  unsigned init_epoch = 0;   // block_epoch at mbarrier.init: other threads need a barrier after it
  bool init_fenced = false;  // fence.mbarrier_init executed since: the async proxy may use it
};

// A named barrier (bar.sync / bar.arrive with a thread count).
struct NamedBarrier {
  unsigned expected = 0;  // 0 while idle
  unsigned arrived = 0;
};

// One wgmma.mma_async of a warp, computed at issue; its accumulators reach the lanes' registers
// only when a wgmma_wait_group retires its group.
struct WgmmaOp {
  float* d[32];
  int count = 0;                             // accumulators per lane (N / 2)
  std::vector<float> result;                 // [lane][count]
  std::size_t read_begin = 0, read_end = 0;  // the shared bytes its operands lie in
};

struct WarpWgmma {
  bool fenced = false;        // a wgmma_fence since the last wgmma_wait_group
  unsigned issued = 0;        // wgmma.mma_async so far: the 4 warps of a warpgroup issue the same
  std::vector<WgmmaOp> open;  // issued since the last commit
  std::deque<std::vector<WgmmaOp>> committed;  // oldest first
};

struct HopperState {
  static constexpr unsigned kNamedBarriers = 16;
  std::map<unsigned, Mbarrier> mbarriers;
  NamedBarrier named[kNamedBarriers];
  std::vector<WarpWgmma> wgmma;  // per warp

  void reset(std::size_t num_warps) {
    mbarriers.clear();
    for (NamedBarrier& barrier : named) barrier = NamedBarrier{};
    wgmma.assign(num_warps, WarpWgmma{});
  }
};

// Note: one instance per shared object, like emulator().
inline HopperState& hopper() {
  static HopperState instance;
  return instance;
}

}  // namespace attnjit::simt
