// Emulated sm90_barrier.cuh: mbarriers with arrival and transaction counts and phases, named
// barriers, the proxy fences and elect.sync. A wait parks the fiber until the phase completes;
// when every live thread waits and nothing is in flight, the scheduler reports a deadlock naming
// the barrier (describe_wait) instead of hanging.
// Note: a TMA load lands and completes its bytes at once (hopper_tma.hpp), so "nothing in flight"
// holds whenever every thread waits. mbarrier_try_wait blocks until the phase completes and then
// returns true: the hardware may return false after a time limit, and code that needs a false
// result to make progress is reported as a deadlock here.
#pragma once

#include <string>

#include "attnjit/sm90_barrier.cuh"
#include "attnjit_simt/hopper_state.hpp"
#include "attnjit_simt/primitives.hpp"

namespace attnjit::simt {

// The barrier at shared-window address `bar`, initialised and visible to this thread.
inline Mbarrier& mbarrier_at(unsigned bar, const char* what, unsigned& offset) {
  offset = static_cast<unsigned>(emulator().smem->offset_of_address(bar, 8, what));
  const auto found = hopper().mbarriers.find(offset);
  if (found == hopper().mbarriers.end()) {
    fail("%s on shared byte %u, which holds no initialised mbarrier", what, offset);
  }
  Mbarrier& barrier = found->second;
  const Emulator& e = emulator();
  if (e.current != nullptr && e.current->tid != barrier.init_thread &&
      e.block_epoch == barrier.init_epoch) {
    fail(
        "%s on the mbarrier at shared byte %u before a __syncthreads made thread %d's "
        "mbarrier_init visible",
        what, offset, barrier.init_thread);
  }
  return barrier;
}

inline void complete_phase_if_done(unsigned offset, Mbarrier& barrier) {
  if (barrier.pending != 0 || barrier.tx != 0) return;
  ++barrier.phase;
  barrier.pending = barrier.expected;
  for (ThreadState& t : emulator().threads) {
    if (t.waiting == Wait::mbarrier && t.wait_object == offset) t.waiting = Wait::none;
  }
}

// complete_tx of a TMA load (the async proxy, hence the fence.mbarrier_init requirement).
inline void mbarrier_complete_tx(unsigned offset, Mbarrier& barrier, unsigned bytes) {
  if (!barrier.init_fenced) {
    fail(
        "a TMA load completes on the mbarrier at shared byte %u, whose mbarrier_init was not "
        "followed by fence_mbarrier_init",
        offset);
  }
  barrier.tx -= bytes;
  complete_phase_if_done(offset, barrier);
}

inline void arrive_on(unsigned bar, unsigned tx_bytes, const char* what) {
  unsigned offset;
  Mbarrier& barrier = mbarrier_at(bar, what, offset);
  const unsigned phase = barrier.phase;
  if (ThreadState* t = emulator().current; t != nullptr) {
    t->releases.push_back(Release{offset, phase, t->shared_writes, ++emulator().access_clock});
  }
  barrier.tx += tx_bytes;
  --barrier.pending;
  complete_phase_if_done(offset, barrier);
  // Note: an arrival that completes a phase lets every other thread run as far as it can before
  // the arriving one goes on. On hardware the threads the phase releases may run at once, while
  // this thread's next instructions come much later; so what it does after the arrival (retire
  // the wgmma reading the stage it just released, say) must not be what they need. Without this
  // the arriving fiber ran on to its next wait first, and such a release passed unseen.
  if (barrier.phase != phase) yield_fiber();
}

inline void record_observed_phases(ThreadState& t, unsigned offset, unsigned phases) {
  for (ObservedPhases& seen : t.observed_phases) {
    if (seen.barrier == offset) {
      if (phases > seen.phases) seen.phases = phases;
      return;
    }
  }
  t.observed_phases.push_back({offset, phases});
}

inline std::string describe_named_barrier(const ThreadState& t) {
  const NamedBarrier& barrier = hopper().named[t.wait_object];
  char text[160];
  std::snprintf(text, sizeof text, "waits at named barrier %u (%u of %u threads arrived)",
                t.wait_object, barrier.arrived, barrier.expected);
  return text;
}

inline std::string describe_wait(const ThreadState& t) {
  if (t.waiting == Wait::named_barrier) return describe_named_barrier(t);
  const Mbarrier& barrier = hopper().mbarriers[t.wait_object];
  char text[320];
  std::snprintf(text, sizeof text,
                "waits%s%s%s on the mbarrier at shared byte %u (phase %u: %u of %u arrivals and "
                "%lld transaction bytes pending)",
                t.wait_label != nullptr ? " (\"" : "", t.wait_label != nullptr ? t.wait_label : "",
                t.wait_label != nullptr ? "\")" : "", t.wait_object, barrier.phase,
                barrier.pending, barrier.expected, barrier.tx);
  return text;
}

// bar.sync / bar.arrive: `wait` parks the thread until `num_threads` threads have arrived.
// Note: a completed named barrier advances the block epoch, i.e. the race checker treats it as
// ordering the whole block. That is lenient (it can miss a race between a participant and a
// thread outside the barrier), never a false report.
inline void named_barrier(unsigned id, unsigned num_threads, bool wait) {
  Emulator& e = emulator();
  const char* what = wait ? "bar.sync" : "bar.arrive";
  if (id >= HopperState::kNamedBarriers) fail("%s: barrier id %u is not in [0, 16)", what, id);
  if (num_threads == 0 || num_threads % 32 != 0 || num_threads > e.threads.size()) {
    fail("%s %u: a thread count of %u is not a positive multiple of 32 within the block", what, id,
         num_threads);
  }
  NamedBarrier& barrier = hopper().named[id];
  if (barrier.expected != 0 && barrier.expected != num_threads) {
    fail("%s %u with %u threads while it is in use with %u", what, id, num_threads,
         barrier.expected);
  }
  barrier.expected = num_threads;
  if (++barrier.arrived == num_threads) {
    barrier = NamedBarrier{};
    ++e.block_epoch;
    for (ThreadState& t : e.threads) {
      if (t.waiting == Wait::named_barrier && t.wait_object == id) t.waiting = Wait::none;
    }
  } else if (wait) {
    this_thread().wait_object = id;
    park(Wait::named_barrier);
  }
}

// A named barrier some threads reached and the rest never did. On hardware the block just ends,
// but a hand-off protocol (the sm90 kernel's ping-pong turns: bar.sync on its own barrier,
// bar.arrive on the other's) that leaves one half complete has a turn too many or too few.
inline void check_named_barriers_at_block_end() {
  for (unsigned id = 0; id < HopperState::kNamedBarriers; ++id) {
    const NamedBarrier& barrier = hopper().named[id];
    if (barrier.expected != 0) {
      fail(
          "the block ended with named barrier %u half complete: %u of %u threads arrived (a "
          "bar.arrive that no bar.sync met, or the reverse)",
          id, barrier.arrived, barrier.expected);
    }
  }
}

}  // namespace attnjit::simt

namespace attnjit {

inline void mbarrier_init(unsigned bar, unsigned arrive_count) {
  simt::Emulator& e = simt::emulator();
  simt::ThreadState& t = simt::this_thread();
  const std::size_t offset = e.smem->offset_of_address(bar, 8, "mbarrier.init");
  if (arrive_count == 0 || arrive_count >= (1u << 20)) {
    simt::fail("mbarrier.init with an arrival count of %u, outside [1, 2^20)", arrive_count);
  }
  // Note: the 8 bytes count as written, so the race checker sees two inits of one barrier.
  static const unsigned char opaque[8] = {};
  e.smem->write(offset, opaque, 8, t.tid, t.warp, "mbarrier.init");
  simt::Mbarrier& barrier = simt::hopper().mbarriers[static_cast<unsigned>(offset)];
  barrier = simt::Mbarrier{};
  barrier.expected = arrive_count;
  barrier.pending = arrive_count;
  barrier.init_thread = t.tid;
  barrier.init_epoch = e.block_epoch;
}

inline void fence_mbarrier_init() {
  const int tid = simt::this_thread().tid;
  for (auto& [offset, barrier] : simt::hopper().mbarriers) {
    if (barrier.init_thread == tid) barrier.init_fenced = true;
  }
}

inline void mbarrier_arrive(unsigned bar) { simt::arrive_on(bar, 0, "mbarrier.arrive"); }

inline void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
  simt::arrive_on(bar, bytes, "mbarrier.arrive.expect_tx");
}

inline bool mbarrier_try_wait(unsigned bar, unsigned phase_parity) {
  simt::ThreadState& t = simt::this_thread();
  unsigned offset;
  simt::Mbarrier* barrier = &simt::mbarrier_at(bar, "mbarrier.try_wait", offset);
  // The phase of parity P has completed while the current (incomplete) phase has the other
  // parity (PTX ISA, "mbarrier.test_wait/try_wait": .parity variant).
  while ((barrier->phase & 1u) == (phase_parity & 1u)) {
    t.wait_object = offset;
    simt::park(simt::Wait::mbarrier);
    barrier = &simt::mbarrier_at(bar, "mbarrier.try_wait", offset);
  }
  // The latest completed phase of that parity; phase 0 with parity 1 is "the phase before the
  // first", complete from the start, which shows nothing.
  const unsigned seen =
      ((barrier->phase - 1u) & 1u) == (phase_parity & 1u) ? barrier->phase : barrier->phase - 1u;
  simt::record_observed_phases(t, offset, seen);
  return true;
}

// `what` (sm90_barrier.cuh's watchdog label) goes into a deadlock report of this wait.
inline void mbarrier_wait(unsigned bar, unsigned phase_parity, const char* what = "mbarrier") {
  simt::ThreadState& t = simt::this_thread();
  t.wait_label = what;
  while (!mbarrier_try_wait(bar, phase_parity)) {
  }
  t.wait_label = nullptr;
}

inline void fence_proxy_async_shared() { ++simt::this_thread().proxy_fences; }

inline void named_barrier_sync(unsigned id, unsigned num_threads) {
  simt::named_barrier(id, num_threads, true);
}

inline void named_barrier_arrive(unsigned id, unsigned num_threads) {
  simt::named_barrier(id, num_threads, false);
}

// elect.sync over a converged warp: the lowest lane, 0.
inline int elect_one_lane() {
  simt::LaneInput input{};
  const unsigned* out =
      simt::warp_collective(simt::Collective::elect, input, [](simt::WarpState& w) {
        for (int lane = 0; lane < 32; ++lane) w.out[lane][0] = lane == 0 ? 1u : 0u;
      });
  return static_cast<int>(out[0]);
}

}  // namespace attnjit
