// What the sm90 kernel's mbarrier watchdog (ATTNJIT_TUNE=sm90_watchdog_ms, sm90_barrier.cuh)
// leaves for the host when a wait outlives its limit. The record lives in pinned host memory
// mapped into the device (cuMemHostAlloc), so the host can still read it after the kernel's fault
// has made the context unusable; the module's global ATTNJIT_SM90_WATCHDOG_SYMBOL points at it. Shared by
// host and device so the layout agrees.
#pragma once

namespace attnjit {

struct Sm90WatchdogRecord {
  unsigned claimed;     // 0 until the first expired wait claims the record (atomicCAS)
  unsigned barrier;     // the mbarrier's shared-window address
  unsigned parity;      // the phase parity waited for
  unsigned block[3];    // blockIdx of the waiting thread
  unsigned thread;      // its threadIdx.x
  unsigned elapsed_ms;  // how long it had waited
  char what[16];        // the wait's label ("K full"), NUL-terminated
};

// The module global (a Sm90WatchdogRecord*) that the host sets after loading a kernel built with
// the watchdog (null until it does: the kernel then only faults), and its name for
// cuModuleGetGlobal.
#define ATTNJIT_SM90_WATCHDOG_SYMBOL attnjit_sm90_watchdog_record
#define ATTNJIT_SM90_WATCHDOG_SYMBOL_NAME "attnjit_sm90_watchdog_record"

}  // namespace attnjit
