// Small owning wrappers over driver allocations and events, for tests, the bench and tools.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <span>

namespace attnjit::cuda {

enum class MemoryKind { device, managed };

// cuMemAlloc'ed device memory (or cuMemAllocManaged'ed, CU_MEM_ATTACH_GLOBAL), in the current
// context (made current when there is none), freed on destruction (errors then are ignored).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes, MemoryKind kind = MemoryKind::device);
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

// A stream of the current context (CU_STREAM_NON_BLOCKING), destroyed with the object.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  CUstream get() const { return stream_; }
  void synchronize();

 private:
  CUstream stream_ = nullptr;
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
