#include "driver/watchdog_record.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "common/error.hpp"
#include "driver/cuda_driver.hpp"

namespace attnjit::driver {
namespace {

constexpr const char* kWatchdogSymbol = ATTNJIT_SM90_WATCHDOG_SYMBOL_NAME;

// Note: read without the lock, because a driver error raised while attaching (with the lock
// held) reads it for its message.
std::atomic<Sm90WatchdogRecord*> g_record{nullptr};
std::mutex g_allocation;

// Frees the record when the process exits (or the library is unloaded), so that a leak checker
// (compute-sanitizer --leak-check full, as tools/gpu-check.sh runs it) finds no pinned memory
// left behind. Constructed after the allocation, so destroyed before the driver's table and the
// context registry, which were constructed earlier. Best effort: with no context current at that
// point the driver refuses, and the memory goes with the process anyway.
struct RecordRelease {
  RecordRelease() = default;
  RecordRelease(const RecordRelease&) = delete;
  RecordRelease& operator=(const RecordRelease&) = delete;
  ~RecordRelease() {
    Sm90WatchdogRecord* record = g_record.exchange(nullptr, std::memory_order_acq_rel);
    if (record == nullptr || !driver_available()) return;
    const DriverApi& d = api();
    if (d.cuMemFreeHost != nullptr) static_cast<void>(d.cuMemFreeHost(record));
  }
};

Sm90WatchdogRecord* process_record() {
  std::lock_guard lock(g_allocation);
  if (Sm90WatchdogRecord* record = g_record.load(std::memory_order_acquire)) return record;
  void* memory = nullptr;
  ATTNJIT_CU(cuMemHostAlloc, &memory, sizeof(Sm90WatchdogRecord),
             CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
  std::memset(memory, 0, sizeof(Sm90WatchdogRecord));
  auto* record = static_cast<Sm90WatchdogRecord*>(memory);
  g_record.store(record, std::memory_order_release);
  static const RecordRelease release;
  return record;
}

bool reports_a_fault(CUresult result) {
  return result == CUDA_ERROR_LAUNCH_FAILED || result == CUDA_ERROR_ILLEGAL_ADDRESS ||
         result == CUDA_ERROR_ILLEGAL_INSTRUCTION;
}

}  // namespace

void attach_watchdog_record(CUmodule module) {
  Sm90WatchdogRecord* record = process_record();
  CUdeviceptr device_record = 0;
  ATTNJIT_CU(cuMemHostGetDevicePointer, &device_record, record, 0u);
  CUdeviceptr global = 0;
  std::size_t bytes = 0;
  ATTNJIT_CU(cuModuleGetGlobal, &global, &bytes, module, kWatchdogSymbol);
  if (bytes != sizeof(device_record)) {
    throw_error(Status::internal, "the kernel's {} has {} bytes, not a pointer's {}",
                kWatchdogSymbol, bytes, sizeof(device_record));
  }
  ATTNJIT_CU(cuMemcpyHtoD, global, &device_record, sizeof(device_record));
}

std::optional<Sm90WatchdogRecord> read_watchdog_record() {
  const Sm90WatchdogRecord* record = g_record.load(std::memory_order_acquire);
  if (record == nullptr) return std::nullopt;
  // Note: the device writes this memory behind the compiler's back; volatile reads see it.
  Sm90WatchdogRecord copy;
  const auto* from = reinterpret_cast<const volatile unsigned char*>(record);
  auto* to = reinterpret_cast<unsigned char*>(&copy);
  for (std::size_t i = 0; i < sizeof(copy); ++i) to[i] = from[i];
  return copy;
}

std::string watchdog_hint(CUresult result, const std::optional<Sm90WatchdogRecord>& record) {
  if (!record || !reports_a_fault(result)) return {};
  if (record->claimed == 0) {
    return ". An sm90 kernel with the mbarrier watchdog (ATTNJIT_TUNE sm90_watchdog_ms) was "
           "loaded in this process, and none of its waits timed out: the watchdog did not cause "
           "this failure";
  }
  const std::string what(record->what, strnlen(record->what, sizeof(record->what)));
  return fmt::format(
      ". The sm90 mbarrier watchdog (ATTNJIT_TUNE sm90_watchdog_ms) ended the kernel: the wait "
      "\"{}\" (mbarrier at shared address {:#x}, parity {}) of block ({}, {}, {}) thread {} was "
      "still incomplete after {} ms",
      what, record->barrier, record->parity, record->block[0], record->block[1], record->block[2],
      record->thread, record->elapsed_ms);
}

std::string watchdog_hint(CUresult result) { return watchdog_hint(result, read_watchdog_record()); }

}  // namespace attnjit::driver
