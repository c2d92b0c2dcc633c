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

// Shared bytes [begin, end); empty by default.
struct ByteRange {
  std::size_t begin = 0, end = 0;
  bool overlaps(std::size_t other_begin, std::size_t other_end) const {
    return begin < other_end && other_begin < end;
  }
};

// One wgmma.mma_async of a warp, computed at issue; its accumulators reach the lanes' registers
// only when a wgmma_wait_group retires its group.
struct WgmmaOp {
  float* d[32];
  int count = 0;              // accumulators per lane (N / 2)
  std::vector<float> result;  // [lane][count]
  // The shared bytes its operands lie in: A (empty when A is in registers) and B. Kept apart:
  // their hull may cover what other warps write meanwhile (another warpgroup's P tile).
  ByteRange reads[2];
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

// The hardware reads a wgmma's shared operands at some time before the wait_group that retires
// it; the emulator reads them at issue. So a write into them before that wait, by TMA or by a
// plain store, is a race on the GPU that the emulator's arithmetic would not show: report it.
inline void check_no_wgmma_reads(std::size_t begin, std::size_t end, const char* what) {
  const std::vector<WarpWgmma>& warps = hopper().wgmma;
  for (std::size_t warp = 0; warp < warps.size(); ++warp) {
    auto overlaps = [&](const std::vector<WgmmaOp>& ops) {
      for (const WgmmaOp& op : ops) {
        if (op.reads[0].overlaps(begin, end) || op.reads[1].overlaps(begin, end)) return true;
      }
      return false;
    };
    bool hit = overlaps(warps[warp].open);
    for (const auto& group : warps[warp].committed) hit = hit || overlaps(group);
    if (hit) {
      fail(
          "%s into shared bytes [%zu, %zu) while a wgmma of warp %zu still reads them "
          "(no wgmma_wait_group retired it)",
          what, begin, end, warp);
    }
  }
}

}  // namespace attnjit::simt
