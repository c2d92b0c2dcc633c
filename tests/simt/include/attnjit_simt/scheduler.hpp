// The SIMT execution model on the host: every thread of a block is a fiber (ucontext) and the
// scheduler runs them round-robin until each reaches a warp collective, a block barrier or its
// end. A warp collective (ldmatrix, mma, shuffle, __syncwarp) completes when all 32 lanes have
// arrived, and is then computed for the whole warp at once from every lane's inputs, as the
// hardware does; a barrier completes when every thread of the block has arrived. A thread that
// arrives on an mbarrier goes on only once no other thread can (yield_fiber): whoever the
// arrival releases runs first, as it may on the hardware.
//
// Divergence the hardware would not forgive is an error, never a hang: lanes of one warp at
// different collectives, a barrier some threads never reach, a thread that exits while others
// wait for it, an mbarrier or named barrier no arrival can complete any more. The first error
// stops the launch and names the block, thread and reason.
#pragma once

#include <ucontext.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attnjit_simt/launch_abi.hpp"

namespace attnjit::simt {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// What a parked fiber waits for: its warp's collective, __syncthreads, an mbarrier phase or a
// named barrier (hopper_barrier.hpp; ThreadState::wait_object names which).
// `yielded`: runnable, but only once no other fiber can run (yield_fiber).
enum class Wait { none, warp, block, mbarrier, named_barrier, yielded };

enum class Collective {
  none,
  ldmatrix,
  ldmatrix_trans,
  mma_bf16,
  mma_fp16,
  shfl_xor,
  shfl_idx,
  ballot,
  syncwarp,
  elect,
  wgmma,
  wgmma_fence,
  wgmma_commit,
  wgmma_wait
};

inline const char* collective_name(Collective op) {
  switch (op) {
    case Collective::ldmatrix: return "ldmatrix";
    case Collective::ldmatrix_trans: return "ldmatrix.trans";
    case Collective::mma_bf16: return "mma.bf16";
    case Collective::mma_fp16: return "mma.f16";
    case Collective::shfl_xor: return "shfl.xor";
    case Collective::shfl_idx:
      return "shfl.idx";
    case Collective::ballot: return "vote.ballot";
    case Collective::syncwarp: return "__syncwarp";
    case Collective::elect: return "elect.sync";
    case Collective::wgmma: return "wgmma.mma_async";
    case Collective::wgmma_fence: return "wgmma.fence";
    case Collective::wgmma_commit: return "wgmma.commit_group";
    case Collective::wgmma_wait: return "wgmma.wait_group";
    default: return "nothing";
  }
}

// One cp.async: 16 bytes to shared offset `dst` from `src`, or 16 zero bytes when !valid.
struct CopyOp {
  unsigned dst;
  const void* src;
  bool valid;
};

// How many phases of the mbarrier at shared offset `barrier` a thread has seen complete (a
// try_wait that returned true): the TMA data of those phases is visible to it.
struct ObservedPhases {
  unsigned barrier;
  unsigned phases;
};

// An mbarrier arrival of a thread (release semantics, PTX's default for mbarrier.arrive): the
// barrier's shared offset, the phase it arrived in, and how many st.shared the thread had done
// by then, so that a reader that waited for that phase (acquire) sees them; and the block's
// access clock at the arrival (Emulator::access_clock), so that a writer that waited for that
// phase is ordered after the thread's earlier reads (a slot handed back for reuse).
struct Release {
  unsigned barrier;
  unsigned phase;
  unsigned writes;
  unsigned long long clock;
};

struct ThreadState {
  ucontext_t context{};
  std::unique_ptr<char[]> stack;
  int tid = 0, warp = 0, lane = 0;
  bool done = false;
  Wait waiting = Wait::none;
  unsigned wait_object = 0;  // Wait::mbarrier: the barrier's shared offset; named_barrier: its id
  const char* wait_label = nullptr;  // inside mbarrier_wait: its label (the deadlock report)
  std::vector<ObservedPhases> observed_phases;
  unsigned proxy_fences = 0;  // fence.proxy.async executed: orders its earlier st.shared for wgmma
  unsigned shared_writes = 0;      // st.shared executed
  std::vector<Release> releases;  // mbarrier arrivals, in order
  std::vector<CopyOp> open_group;                // issued, not yet committed
  std::deque<std::vector<CopyOp>> in_flight;     // committed groups, oldest first
  bool waited_for_grids = false;  // griddepcontrol.wait executed (grid_dependency.cuh)
};

// A lane's inputs to a warp collective and its outputs.
struct LaneInput {
  unsigned u[8];
  float f[4];
  void* pointer;  // wgmma: the lane's accumulator array
};

struct WarpState {
  int arrived = 0;
  Collective op = Collective::none;
  int first_lane = 0;
  unsigned sync_epoch = 0;  // completed __syncwarp calls: orders memory among the warp's lanes
  LaneInput in[32];
  unsigned out[32][4];
};

class SharedMemory;

struct Emulator {
  Dim3 grid, block_dim, block_idx;
  std::vector<ThreadState> threads;
  std::vector<WarpState> warps;
  ThreadState* current = nullptr;
  ucontext_t scheduler{};
  int barrier_arrived = 0;
  unsigned block_epoch = 0;  // completed __syncthreads calls in this block
  // Ticks at every shared-memory read and mbarrier arrival of the block, so that an arrival can
  // be placed after a read.
  unsigned long long access_clock = 0;
  bool barrier_any = false;     // __syncthreads_or: the OR of this barrier's arrivals so far
  bool barrier_result = false;  // and of the last completed one
  std::unique_ptr<SharedMemory> smem;
  std::vector<SimtRegion> regions;
  // The launch may start before the kernel before it ends (programmatic dependent launch): a read
  // of that kernel's results before the thread's griddepcontrol.wait is an error.
  bool programmatic = false;
  std::function<void()> body;
  bool failed = false;
  std::string error;
};

// Note: one instance per shared object. The module is built with -fno-gnu-unique and hidden
// visibility, so two loaded modules never share (or unload) each other's state.
inline Emulator& emulator() {
  static Emulator instance;
  return instance;
}

inline ThreadState& this_thread() { return *emulator().current; }

// Records the first error with its place and stops the block: the failing fiber is never resumed
// (its frames hold only trivially destructible kernel state) and the scheduler returns.
[[noreturn]] inline void fail_in_scheduler();
template <typename... Args>
void fail(const char* format, Args... args) {
  Emulator& e = emulator();
  if (!e.failed) {
    char message[512];
    std::snprintf(message, sizeof message, format, args...);
    char place[160];
    if (e.current != nullptr) {
      std::snprintf(place, sizeof place, "block (%u, %u), thread %d (warp %d, lane %d): ",
                    e.block_idx.x, e.block_idx.y, e.current->tid, e.current->warp,
                    e.current->lane);
    } else {
      std::snprintf(place, sizeof place, "block (%u, %u): ", e.block_idx.x, e.block_idx.y);
    }
    e.error = std::string(place) + message;
    e.failed = true;
  }
  if (e.current != nullptr) fail_in_scheduler();
}

inline void fail_in_scheduler() {
  Emulator& e = emulator();
  ThreadState& t = *e.current;
  swapcontext(&t.context, &e.scheduler);
  std::abort();  // never resumed after a failure
}

// Parks the current fiber until a collective or barrier releases it.
inline void park(Wait reason) {
  Emulator& e = emulator();
  ThreadState& t = *e.current;
  t.waiting = reason;
  swapcontext(&t.context, &e.scheduler);
}

// Lets every other fiber run as far as it can before this one goes on: the emulated thread
// falls behind the whole block, the other extreme from running on until it blocks.
inline void yield_fiber() { park(Wait::yielded); }

// A warp-wide collective: deposits this lane's input, and when the last lane arrives computes
// every lane's output with `compute(WarpState&)`. Returns this lane's output row.
template <typename Compute>
const unsigned* warp_collective(Collective op, const LaneInput& input, Compute compute) {
  Emulator& e = emulator();
  ThreadState& t = *e.current;
  WarpState& w = e.warps[t.warp];
  const int first = t.warp * 32;
  for (int lane = 0; lane < 32; ++lane) {
    if (e.threads[first + lane].done) {
      fail("%s with lane %d of the warp already exited", collective_name(op), lane);
    }
  }
  if (w.arrived == 0) {
    w.op = op;
    w.first_lane = t.lane;
  } else if (w.op != op) {
    fail("divergent warp: this lane is at %s while lane %d is at %s", collective_name(op),
         w.first_lane, collective_name(w.op));
  }
  w.in[t.lane] = input;
  if (++w.arrived == 32) {
    compute(w);
    w.arrived = 0;
    for (int lane = 0; lane < 32; ++lane) {
      ThreadState& other = e.threads[first + lane];
      if (other.waiting == Wait::warp) other.waiting = Wait::none;
    }
  } else {
    park(Wait::warp);
  }
  return w.out[t.lane];
}

// __syncthreads; with `predicate`, __syncthreads_or: returns whether any thread's was non-zero.
inline bool block_barrier(bool predicate = false) {
  Emulator& e = emulator();
  for (const ThreadState& t : e.threads) {
    if (t.done) fail("__syncthreads after thread %d of the block exited", t.tid);
  }
  e.barrier_any = e.barrier_any || predicate;
  if (++e.barrier_arrived == static_cast<int>(e.threads.size())) {
    e.barrier_arrived = 0;
    // Note: the waiters read the result when they resume, before any of them can complete the
    // next barrier (which needs every thread), so one result per block suffices.
    e.barrier_result = e.barrier_any;
    e.barrier_any = false;
    ++e.block_epoch;
    for (ThreadState& t : e.threads) {
      if (t.waiting == Wait::block) t.waiting = Wait::none;
    }
  } else {
    park(Wait::block);
  }
  return e.barrier_result;
}

void on_thread_exit(ThreadState& t);  // memory checks at exit (emulator.hpp)
void on_block_start();                // resets the Hopper state (emulator.hpp)
void on_block_end();                  // checks what a finished block left behind (emulator.hpp)
std::string describe_wait(const ThreadState& t);  // an mbarrier or named-barrier wait, in words

inline void fiber_main() {
  Emulator& e = emulator();
  e.body();
  ThreadState& t = *e.current;
  on_thread_exit(t);
  if (e.warps[t.warp].arrived > 0) {
    fail("exited while lanes of its warp wait at %s", collective_name(e.warps[t.warp].op));
  }
  if (e.barrier_arrived > 0) fail("exited while other threads wait at __syncthreads");
  t.done = true;
  // Returning resumes uc_link, the scheduler.
}

constexpr std::size_t kFiberStackBytes = 256 * 1024;

// Runs one block to completion (or to its first error). The threads' stacks are allocated once
// per launch and reused by every block.
inline void run_block(Dim3 block_idx) {
  Emulator& e = emulator();
  e.block_idx = block_idx;
  e.barrier_arrived = 0;
  e.block_epoch = 0;
  e.barrier_any = false;
  for (WarpState& w : e.warps) w = WarpState{};
  on_block_start();
  for (ThreadState& t : e.threads) {
    t.done = false;
    t.waiting = Wait::none;
    t.observed_phases.clear();
    t.proxy_fences = 0;
    t.shared_writes = 0;
    t.releases.clear();
    t.open_group.clear();
    t.in_flight.clear();
    t.waited_for_grids = false;
    getcontext(&t.context);
    t.context.uc_stack.ss_sp = t.stack.get();
    t.context.uc_stack.ss_size = kFiberStackBytes;
    t.context.uc_link = &e.scheduler;
    makecontext(&t.context, fiber_main, 0);
  }
  while (!e.failed) {
    bool all_done = true;
    bool ran = false;
    for (ThreadState& t : e.threads) {
      if (t.done) continue;
      all_done = false;
      if (t.waiting != Wait::none) continue;
      e.current = &t;
      swapcontext(&e.scheduler, &t.context);
      e.current = nullptr;
      ran = true;
      if (e.failed) break;
    }
    if (all_done && !e.failed) on_block_end();
    if (all_done || e.failed) break;
    if (!ran) {
      bool resumed = false;
      for (ThreadState& t : e.threads) {
        if (!t.done && t.waiting == Wait::yielded) {
          t.waiting = Wait::none;
          resumed = true;
        }
      }
      if (resumed) continue;
      const ThreadState* stuck = nullptr;
      for (const ThreadState& t : e.threads) {
        if (stuck == nullptr && !t.done &&
            (t.waiting == Wait::mbarrier || t.waiting == Wait::named_barrier)) {
          stuck = &t;
        }
      }
      if (stuck != nullptr) {
        fail("deadlock: every live thread waits and nothing is in flight; thread %d %s",
             stuck->tid, describe_wait(*stuck).c_str());
        break;
      }
      int at_barrier = 0;
      for (const ThreadState& t : e.threads) at_barrier += t.waiting == Wait::block ? 1 : 0;
      fail("deadlock: %d threads wait at __syncthreads while the others wait at warp "
           "collectives",
           at_barrier);
    }
  }
}

}  // namespace attnjit::simt
