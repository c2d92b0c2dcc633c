// The sm90 kernel's mbarrier watchdog (ATTNJIT_TUNE=sm90_watchdog_ms, sm90_barrier.cuh) ends a
// kernel whose wait outlived its limit with a device printf and __trap(). The host sees only what
// every later driver call returns, a launch failure, so driver errors say where the explanation
// is once such a kernel has been queued in this process.
#pragma once

#include <cuda.h>

#include <string>

namespace attnjit::driver {

// Called before queuing a kernel built with the watchdog; from then on (for the life of the
// process: a trap leaves the context unusable anyway) launch failures carry the hint.
void note_watchdog_kernel_queued();
bool watchdog_kernel_queued();

// ". " and one sentence naming the watchdog, when `result` is how a trapped kernel is reported
// (CUDA_ERROR_LAUNCH_FAILED; CUDA_ERROR_ILLEGAL_INSTRUCTION on some drivers) and a watchdog kernel
// was queued; "" otherwise.
std::string watchdog_trap_hint(CUresult result, bool watchdog_queued);

}  // namespace attnjit::driver
