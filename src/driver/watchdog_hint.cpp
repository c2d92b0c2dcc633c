#include "driver/watchdog_hint.hpp"

#include <atomic>

namespace attnjit::driver {
namespace {

std::atomic<bool> g_watchdog_kernel_queued{false};

}  // namespace

void note_watchdog_kernel_queued() {
  g_watchdog_kernel_queued.store(true, std::memory_order_relaxed);
}

bool watchdog_kernel_queued() { return g_watchdog_kernel_queued.load(std::memory_order_relaxed); }

std::string watchdog_trap_hint(CUresult result, bool watchdog_queued) {
  if (!watchdog_queued) return {};
  if (result != CUDA_ERROR_LAUNCH_FAILED && result != CUDA_ERROR_ILLEGAL_INSTRUCTION) return {};
  return ". An sm90 kernel with the mbarrier watchdog (ATTNJIT_TUNE sm90_watchdog_ms) ran: a wait "
         "past its limit traps, which ends the kernel with this launch failure, and the device "
         "printf \"attnjit sm90 watchdog: ...\" on stdout names the wait, barrier, block and "
         "thread.";
}

}  // namespace attnjit::driver
