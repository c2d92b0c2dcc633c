// Device memory, synchronisation and event timing for tools that run the public API on a GPU.
// The CUDA driver is the one the library uses ($ATTNJIT_CUDA_DRIVER, else libcuda.so.1), opened
// with dlopen on first use and never linked, so a tool built on the kit still starts (and runs
// on the CPU backend) where there is no driver. Every call works in the calling thread's current
// context: an attnjit runtime on the CUDA backend makes the device's primary context current when
// it is created, so create one first. Failures throw attnjit::c::Error (ATTNJIT_ERROR_NO_DEVICE
// without a driver, ATTNJIT_ERROR_CUDA for a failed call). Part of the test kit
// (testkit/CMakeLists.txt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace attnjit::testkit {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const;  // the device address, as attnjit_forward_args takes it
  std::size_t size() const { return bytes_; }
  // Synchronous copies of `bytes` (at most size()) bytes.
  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;

 private:
  std::uint64_t address_ = 0;  // CUdeviceptr
  std::size_t bytes_ = 0;
};

// Waits for all work in the current context.
void synchronize_device();

// Two events around work queued on `stream` (a CUstream; nullptr: the default stream).
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start(void* stream);
  void stop(void* stream);
  float elapsed_ms();  // waits for the stop event

 private:
  void* start_ = nullptr;  // CUevent
  void* stop_ = nullptr;
};

struct DeviceProperties {
  std::string name;
  int multiprocessors = 0;
  int l2_bytes = 0;
};

// The current context's device.
DeviceProperties current_device_properties();

}  // namespace attnjit::testkit
