#include "runtime/cuda_memory.hpp"

#include <utility>

#include "common/error.hpp"
#include "driver/cuda_driver.hpp"
#include "runtime/cuda_context.hpp"

namespace attnjit::cuda {

DeviceBuffer::DeviceBuffer(std::size_t bytes, MemoryKind kind) : bytes_(bytes) {
  current_context();  // makes a context current when the caller has none
  if (kind == MemoryKind::managed) {
    ATTNJIT_CU(cuMemAllocManaged, &ptr_, bytes == 0 ? 1 : bytes, CU_MEM_ATTACH_GLOBAL);
  } else {
    ATTNJIT_CU(cuMemAlloc, &ptr_, bytes == 0 ? 1 : bytes);
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != 0 && driver::driver_available() && driver::api().cuMemFree != nullptr) {
    driver::api().cuMemFree(ptr_);
  }
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer old(std::move(*this));
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(std::span<const std::byte> host) {
  if (host.size() > bytes_) {
    throw_error(Status::invalid_argument, "upload of {} bytes into a buffer of {}", host.size(),
                bytes_);
  }
  if (!host.empty()) ATTNJIT_CU(cuMemcpyHtoD, ptr_, host.data(), host.size());
}

void DeviceBuffer::download(std::span<std::byte> host) const {
  if (host.size() > bytes_) {
    throw_error(Status::invalid_argument, "download of {} bytes from a buffer of {}", host.size(),
                bytes_);
  }
  if (!host.empty()) ATTNJIT_CU(cuMemcpyDtoH, host.data(), ptr_, host.size());
}

void DeviceBuffer::fill_u32(unsigned value) {
  if (bytes_ >= 4) ATTNJIT_CU(cuMemsetD32, ptr_, value, bytes_ / 4);
}

Stream::Stream() {
  current_context();
  ATTNJIT_CU(cuStreamCreate, &stream_, CU_STREAM_NON_BLOCKING);
}

Stream::~Stream() {
  if (stream_ != nullptr && driver::driver_available() &&
      driver::api().cuStreamDestroy != nullptr) {
    driver::api().cuStreamDestroy(stream_);
  }
}

void Stream::synchronize() { ATTNJIT_CU(cuStreamSynchronize, stream_); }

EventTimer::EventTimer() {
  current_context();  // events belong to the current context
  ATTNJIT_CU(cuEventCreate, &start_, CU_EVENT_DEFAULT);
  try {
    ATTNJIT_CU(cuEventCreate, &stop_, CU_EVENT_DEFAULT);
  } catch (...) {
    if (driver::api().cuEventDestroy != nullptr) driver::api().cuEventDestroy(start_);
    throw;
  }
}

EventTimer::~EventTimer() {
  if (!driver::driver_available() || driver::api().cuEventDestroy == nullptr) return;
  driver::api().cuEventDestroy(start_);
  driver::api().cuEventDestroy(stop_);
}

void EventTimer::start(CUstream stream) { ATTNJIT_CU(cuEventRecord, start_, stream); }
void EventTimer::stop(CUstream stream) { ATTNJIT_CU(cuEventRecord, stop_, stream); }

float EventTimer::elapsed_ms() {
  ATTNJIT_CU(cuEventSynchronize, stop_);
  float ms = 0.0f;
  ATTNJIT_CU(cuEventElapsedTime, &ms, start_, stop_);
  return ms;
}

void synchronize_context() { ATTNJIT_CU(cuCtxSynchronize); }

}  // namespace attnjit::cuda
