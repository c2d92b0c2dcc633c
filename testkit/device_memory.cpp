#include "testkit/device_memory.hpp"

#include <cuda.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <utility>

#include "attnjit/attnjit.hpp"

namespace attnjit::testkit {
namespace {

// The exported name cuda.h gives a function (cuMemAlloc -> "cuMemAlloc_v2"), so that each
// pointer has the ABI the header declares.
#define ATTNJIT_KIT_STRINGIFY(name) #name
#define ATTNJIT_KIT_EXPORTED_NAME(name) ATTNJIT_KIT_STRINGIFY(name)

// The driver functions the kit calls: one line each.
#define ATTNJIT_KIT_DRIVER_FUNCTIONS(X) \
  X(cuGetErrorName)                     \
  X(cuCtxGetDevice)                     \
  X(cuCtxSynchronize)                   \
  X(cuDeviceGetName)                    \
  X(cuDeviceGetAttribute)               \
  X(cuMemAlloc)                         \
  X(cuMemFree)                          \
  X(cuMemcpyHtoD)                       \
  X(cuMemcpyDtoH)                       \
  X(cuEventCreate)                      \
  X(cuEventRecord)                      \
  X(cuEventSynchronize)                 \
  X(cuEventElapsedTime)                 \
  X(cuEventDestroy)

struct Driver {
#define ATTNJIT_KIT_DECLARE(name) decltype(&::name) name = nullptr;
  ATTNJIT_KIT_DRIVER_FUNCTIONS(ATTNJIT_KIT_DECLARE)
#undef ATTNJIT_KIT_DECLARE
};

// Note: the same library as the runtime's loader opens, so the kit works in the context the
// runtime made current (dlopen of an already loaded path returns that library). Never closed.
Driver load_driver() {
  const char* configured = std::getenv("ATTNJIT_CUDA_DRIVER");
  const std::string path =
      configured != nullptr && *configured != '\0' ? configured : "libcuda.so.1";
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    throw c::Error(ATTNJIT_ERROR_NO_DEVICE, fmt::format("cannot load the CUDA driver {}: {}", path,
                                                        why != nullptr ? why : "dlopen failed"));
  }
  Driver driver;
#define ATTNJIT_KIT_RESOLVE(name)                                                             \
  driver.name =                                                                               \
      reinterpret_cast<decltype(&::name)>(::dlsym(library, ATTNJIT_KIT_EXPORTED_NAME(name))); \
  if (driver.name == nullptr) {                                                               \
    throw c::Error(ATTNJIT_ERROR_NO_DEVICE, fmt::format("the CUDA driver {} lacks {}", path,  \
                                                        ATTNJIT_KIT_EXPORTED_NAME(name)));    \
  }
  ATTNJIT_KIT_DRIVER_FUNCTIONS(ATTNJIT_KIT_RESOLVE)
#undef ATTNJIT_KIT_RESOLVE
  return driver;
}

const Driver& driver() {
  static const Driver loaded = load_driver();
  return loaded;
}

void check(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  driver().cuGetErrorName(result, &name);
  throw c::Error(ATTNJIT_ERROR_CUDA,
                 fmt::format("{} failed: {}", call,
                             name != nullptr ? name : fmt::format("CUresult {}", int(result))));
}

}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  CUdeviceptr address = 0;
  check(driver().cuMemAlloc(&address, bytes == 0 ? 1 : bytes), "cuMemAlloc");
  address_ = address;
}

DeviceBuffer::~DeviceBuffer() {
  // Note: a destructor must not throw; a failed free leaks the buffer, nothing else.
  if (address_ != 0) driver().cuMemFree(static_cast<CUdeviceptr>(address_));
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : address_(std::exchange(other.address_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer old(std::move(*this));
    address_ = std::exchange(other.address_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void* DeviceBuffer::get() const {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address_));
}

void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  if (bytes > bytes_) {
    throw c::Error(ATTNJIT_ERROR_INVALID_ARGUMENT,
                   fmt::format("upload of {} bytes into a {}-byte device buffer", bytes, bytes_));
  }
  check(driver().cuMemcpyHtoD(static_cast<CUdeviceptr>(address_), host, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::download(void* host, std::size_t bytes) const {
  if (bytes > bytes_) {
    throw c::Error(ATTNJIT_ERROR_INVALID_ARGUMENT,
                   fmt::format("download of {} bytes from a {}-byte device buffer", bytes, bytes_));
  }
  check(driver().cuMemcpyDtoH(host, static_cast<CUdeviceptr>(address_), bytes), "cuMemcpyDtoH");
}

void synchronize_device() { check(driver().cuCtxSynchronize(), "cuCtxSynchronize"); }

EventTimer::EventTimer() {
  CUevent start = nullptr, stop = nullptr;
  check(driver().cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  start_ = start;
  check(driver().cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  stop_ = stop;
}

EventTimer::~EventTimer() {
  if (start_ != nullptr) driver().cuEventDestroy(static_cast<CUevent>(start_));
  if (stop_ != nullptr) driver().cuEventDestroy(static_cast<CUevent>(stop_));
}

void EventTimer::start(void* stream) {
  check(driver().cuEventRecord(static_cast<CUevent>(start_), static_cast<CUstream>(stream)),
        "cuEventRecord");
}

void EventTimer::stop(void* stream) {
  check(driver().cuEventRecord(static_cast<CUevent>(stop_), static_cast<CUstream>(stream)),
        "cuEventRecord");
}

float EventTimer::elapsed_ms() {
  check(driver().cuEventSynchronize(static_cast<CUevent>(stop_)), "cuEventSynchronize");
  float ms = 0.0f;
  check(driver().cuEventElapsedTime(&ms, static_cast<CUevent>(start_), static_cast<CUevent>(stop_)),
        "cuEventElapsedTime");
  return ms;
}

DeviceProperties current_device_properties() {
  CUdevice device = 0;
  check(driver().cuCtxGetDevice(&device), "cuCtxGetDevice");
  DeviceProperties properties;
  char name[256] = {};
  check(driver().cuDeviceGetName(name, static_cast<int>(sizeof name - 1), device),
        "cuDeviceGetName");
  properties.name = name;
  check(driver().cuDeviceGetAttribute(&properties.multiprocessors,
                                      CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
        "cuDeviceGetAttribute");
  check(driver().cuDeviceGetAttribute(&properties.l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                                      device),
        "cuDeviceGetAttribute");
  return properties;
}

}  // namespace attnjit::testkit
