// Hopper (sm_90) synchronisation primitives: mbarriers in shared memory (arrive counts plus
// transaction bytes, the completion mechanism of TMA loads), the proxy fences, named barriers and
// warp election.
//
// An mbarrier (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier") is a
// 64-bit object in shared memory with a current phase, a pending arrival count and a pending
// transaction count. A phase completes when both reach zero; the barrier then flips its phase
// parity and reloads the arrival count given to mbarrier.init. Waiters name the parity of the
// phase they wait for (mbarrier.try_wait.parity): the call returns true once that phase has
// completed, i.e. while the current phase parity differs from the one given.
// Note: the SIMT emulator (tests/simt/include/attnjit_simt/hopper_barrier.hpp) defines the same
// functions for host runs and reports a wait no arrival can ever complete as a deadlock.
#pragma once

#include "attnjit/hd.cuh"
#include "attnjit/sm90_watchdog_record.cuh"

namespace attnjit {

#if ATTNJIT_DEVICE_COMPILE

// `bar`: the 8-byte-aligned shared-window address of the barrier (smem_address()).
ATTNJIT_DEVICE void mbarrier_init(unsigned bar, unsigned arrive_count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrive_count)
               : "memory");
}

// Makes the initialised barriers visible to the async proxy (TMA) and to other threads; follow it
// with __syncthreads before any thread uses them (PTX ISA, "membar/fence": fence.mbarrier_init).
ATTNJIT_DEVICE void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival (release semantics at CTA scope); the returned state token is not needed because
// every wait here is by phase parity.
ATTNJIT_DEVICE void mbarrier_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// One arrival that also adds `bytes` to the pending transaction count: the producer announces the
// bytes its TMA loads will complete on this barrier (mbarrier.arrive.expect_tx).
ATTNJIT_DEVICE void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

// True once the phase of parity `phase_parity` has completed (acquire at CTA scope). The hardware
// may suspend the thread for a system-dependent time before returning false.
ATTNJIT_DEVICE bool mbarrier_try_wait(unsigned bar, unsigned phase_parity) {
  unsigned done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar), "r"(phase_parity)
      : "memory");
  return done != 0;
}

#ifdef ATTNJIT_SM90_WATCHDOG_NS

// The global nanosecond timer (PTX ISA, "Special Registers: %globaltimer"): the same clock on
// every SM, so a wait's elapsed time does not depend on where the warp runs.
ATTNJIT_DEVICE unsigned long long global_timer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(ns));
  return ns;
}

}  // namespace attnjit

// The host points it at its record (sm90_watchdog_record.cuh) when it loads the module.
extern "C" __device__ attnjit::Sm90WatchdogRecord* ATTNJIT_SM90_WATCHDOG_SYMBOL;
__device__ attnjit::Sm90WatchdogRecord* ATTNJIT_SM90_WATCHDOG_SYMBOL = nullptr;

namespace attnjit {

// A wait that outlived ATTNJIT_SM90_WATCHDOG_NS: the first such thread in the grid writes what it
// waited for into the host's record, and every such thread then ends the kernel with a store to
// address 0, an illegal address the driver reports to the host.
// Note: not __trap(). With a trap anywhere in the kernel, ptxas (CUDA 13.0) silently gives every
// warp the launch's 168 registers instead of setmaxnreg's 240 for the consumers (the default
// causal D=128 kernel's SASS uses 222), so the watchdog kernel would be another kernel; the store
// changes nothing of the allocation. Not printf either: a call inside the consumers' wgmma
// pipeline makes ptxas serialise their wgmma (C7510), and its output is lost when the context
// dies before the buffer is flushed.
ATTNJIT_DEVICE void mbarrier_watchdog_expired(unsigned bar, unsigned phase_parity,
                                              const char* what, unsigned long long elapsed_ns) {
  Sm90WatchdogRecord* record = ATTNJIT_SM90_WATCHDOG_SYMBOL;
  if (record != nullptr && atomicCAS(&record->claimed, 0u, 1u) == 0u) {
    record->barrier = bar;
    record->parity = phase_parity;
    record->block[0] = blockIdx.x;
    record->block[1] = blockIdx.y;
    record->block[2] = blockIdx.z;
    record->thread = threadIdx.x;
    record->elapsed_ms = static_cast<unsigned>(elapsed_ns / 1000000ull);
    for (int i = 0; i + 1 < static_cast<int>(sizeof(record->what)) && what[i] != '\0'; ++i) {
      record->what[i] = what[i];
    }
    // The record reaches host memory before the fault below ends the kernel.
    __threadfence_system();
  }
  asm volatile("st.volatile.global.u32 [%0], 0;\n" ::"l"(0ull) : "memory");
}

#endif  // ATTNJIT_SM90_WATCHDOG_NS

// Waits until the phase of parity `phase_parity` has completed. `what` names the wait in the
// watchdog's message ("K full"); without ATTNJIT_SM90_WATCHDOG_NS (the default kernels) it is
// unused and this is the plain try_wait loop. With it (the generated source defines it for
// ATTNJIT_TUNE's sm90_watchdog_ms), a wait longer than that many nanoseconds records itself and
// faults, so a barrier that never completes on hardware is a launch failure naming the wait, not
// a hang.
// Note: the timer is read only after a first failed try, so a wait that succeeds at once costs
// what it always did.
ATTNJIT_DEVICE void mbarrier_wait(unsigned bar, unsigned phase_parity,
                                  const char* what = "mbarrier") {
#ifdef ATTNJIT_SM90_WATCHDOG_NS
  if (mbarrier_try_wait(bar, phase_parity)) return;
  const unsigned long long start = global_timer_ns();
  while (!mbarrier_try_wait(bar, phase_parity)) {
    const unsigned long long elapsed = global_timer_ns() - start;
    if (elapsed > ATTNJIT_SM90_WATCHDOG_NS) {
      mbarrier_watchdog_expired(bar, phase_parity, what, elapsed);
    }
  }
#else
  (void)what;
  while (!mbarrier_try_wait(bar, phase_parity)) {
  }
#endif
}

// Orders this thread's earlier generic-proxy shared-memory writes (st.shared) before later
// async-proxy accesses (wgmma operand reads, TMA): PTX ISA, "Memory Consistency Model: Proxies".
ATTNJIT_DEVICE void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Hardware barrier `id` (0 is the one __syncthreads uses) completing when `num_threads` threads (a
// multiple of 32) have arrived: bar.sync waits for it, bar.arrive only counts (PTX ISA, "bar,
// barrier"). A producer's bar.arrive paired with consumers' bar.sync signals without blocking.
ATTNJIT_DEVICE void named_barrier_sync(unsigned id, unsigned num_threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(num_threads) : "memory");
}

ATTNJIT_DEVICE void named_barrier_arrive(unsigned id, unsigned num_threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(num_threads) : "memory");
}

// 1 in exactly one lane of the converged warp, 0 in the others (elect.sync, PTX ISA "elect").
ATTNJIT_DEVICE int elect_one_lane() {
  unsigned elected;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "elect.sync _|p, 0xffffffff;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(elected));
  return static_cast<int>(elected);
}

#endif  // ATTNJIT_DEVICE_COMPILE

}  // namespace attnjit
