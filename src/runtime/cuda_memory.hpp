// Small owning wrappers over driver allocations and events, for tests, the bench and tools.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <span>

namespace attnjit::cuda {

// cuMemAlloc'ed device memory, freed on destruction (errors at that point are ignored).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return reinterpret_cast<void*>(ptr_); }
  CUdeviceptr address() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

  void upload(std::span<const std::byte> host);    // synchronous, host.size() <= bytes()
  void download(std::span<std::byte> host) const;  // synchronous, host.size() <= bytes()
  void fill_u32(unsigned value);                   // every 32-bit word, synchronous

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

// A pair of events timing work queued on one stream.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start(CUstream stream);
  void stop(CUstream stream);
  float elapsed_ms();  // waits for the stop event

 private:
  CUevent start_ = nullptr;
  CUevent stop_ = nullptr;
};

void synchronize_context();

}  // namespace attnjit::cuda
