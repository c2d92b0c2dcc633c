// The sm90 kernel's mbarrier watchdog (ATTNJIT_TUNE=sm90_watchdog_ms, sm90_barrier.cuh) ends a
// kernel whose wait outlived its limit with a fault, after writing what it waited for into a
// record in pinned, device-mapped host memory (sm90_watchdog_record.cuh). The host sees only what
// the next driver call returns, so driver errors read the record and name the wait.
#pragma once

#include <cuda.h>

#include <optional>
#include <string>

#include "attnjit/sm90_watchdog_record.cuh"

namespace attnjit::driver {

// Points `module`'s watchdog global at the process's record; the record is allocated at the
// first call (cuMemHostAlloc, portable: one record serves every context) and kept for the life
// of the process, because a fault may surface in any later call. The module's context must be
// current. Throws Error(Status::cuda) when the driver cannot.
void attach_watchdog_record(CUmodule module);

// A copy of the record as the device left it; nullopt while no module has been attached.
std::optional<Sm90WatchdogRecord> read_watchdog_record();

// What a failed driver call's message ends with: ". " and a sentence, or "". Only for the results
// a faulting kernel is reported with (launch failure, illegal address or instruction), and only
// once a watchdog kernel was attached: the wait the record names, or, if no wait claimed it,
// that the watchdog did not cause the failure.
std::string watchdog_hint(CUresult result, const std::optional<Sm90WatchdogRecord>& record);

// watchdog_hint(result, read_watchdog_record()).
std::string watchdog_hint(CUresult result);

}  // namespace attnjit::driver
