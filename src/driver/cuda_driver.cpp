#include "driver/cuda_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <variant>

#include "common/log.hpp"

namespace attnjit::driver {
namespace {

constexpr const char* kDefaultLibrary = "libcuda.so.1";

// Note: the library stays open for the life of the process; module and memory handles held in
// static objects are released at exit and need the code to still be mapped.
void* open_library(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    throw_error(Status::no_device,
                "CUDA driver not found: dlopen({}) failed: {}; attnjit needs an NVIDIA driver "
                "for the cuda backend (use backend cpu or auto)",
                path, reason != nullptr ? reason : "unknown error");
  }
  return handle;
}

template <typename Function>
void resolve(void* handle, const char* symbol, Function& out) {
  out = reinterpret_cast<Function>(dlsym(handle, symbol));
}

}  // namespace

std::string driver_library_path() {
  const char* env = std::getenv("ATTNJIT_CUDA_DRIVER");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(kDefaultLibrary);
}

std::shared_ptr<const DriverApi> load_driver(const std::string& path) {
  void* handle = open_library(path);
  auto table = std::make_shared<DriverApi>();
  table->library_path = path;
#define ATTNJIT_RESOLVE_DRIVER_FUNCTION(name, symbol) resolve(handle, symbol, table->name);
  ATTNJIT_CUDA_DRIVER_FUNCTIONS(ATTNJIT_RESOLVE_DRIVER_FUNCTION)
#undef ATTNJIT_RESOLVE_DRIVER_FUNCTION

  if (table->cuInit == nullptr) {
    throw_error(Status::no_device,
                "CUDA driver at {} does not export cuInit; it is not a usable libcuda", path);
  }
  const CUresult init = table->cuInit(0);
  if (init != CUDA_SUCCESS) {
    const char* name = nullptr;
    const char* text = nullptr;
    if (table->cuGetErrorName != nullptr) table->cuGetErrorName(init, &name);
    if (table->cuGetErrorString != nullptr) table->cuGetErrorString(init, &text);
    throw_error(Status::no_device, "cuInit failed: {}: {} (driver {})",
                name != nullptr ? name : fmt::format("CUresult {}", static_cast<int>(init)),
                text != nullptr ? text : "no description", path);
  }
  if (table->cuDriverGetVersion != nullptr) table->cuDriverGetVersion(&table->driver_version);
  log().debug("loaded CUDA driver {} (version {})", path, table->driver_version);
#define ATTNJIT_REPORT_MISSING_FUNCTION(name, symbol) \
  if (table->name == nullptr) log().debug("CUDA driver {} lacks {}", path, symbol);
  ATTNJIT_CUDA_DRIVER_FUNCTIONS(ATTNJIT_REPORT_MISSING_FUNCTION)
#undef ATTNJIT_REPORT_MISSING_FUNCTION
  return table;
}

namespace {

using LoadResult = std::variant<std::shared_ptr<const DriverApi>, Error>;

const LoadResult& process_driver() {
  static const LoadResult result = []() -> LoadResult {
    try {
      return load_driver(driver_library_path());
    } catch (const Error& error) {
      log().debug("{}", error.what());
      return error;
    }
  }();
  return result;
}

}  // namespace

const DriverApi& api() {
  const LoadResult& result = process_driver();
  if (const auto* error = std::get_if<Error>(&result)) throw *error;
  return *std::get<std::shared_ptr<const DriverApi>>(result);
}

bool driver_available() { return process_driver().index() == 0; }

std::string describe_result(CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (driver_available()) {
    const DriverApi& driver = api();
    if (driver.cuGetErrorName == nullptr || driver.cuGetErrorName(result, &name) != CUDA_SUCCESS) {
      name = nullptr;
    }
    if (driver.cuGetErrorString == nullptr ||
        driver.cuGetErrorString(result, &text) != CUDA_SUCCESS) {
      text = nullptr;
    }
  }
  return fmt::format(
      "{}: {}",
      name != nullptr ? std::string(name) : fmt::format("CUresult {}", static_cast<int>(result)),
      text != nullptr ? text : "no description");
}

Status status_for_result(CUresult result) {
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      return Status::out_of_memory;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
      return Status::no_device;
    default:
      return Status::cuda;
  }
}

void throw_result(CUresult result, const char* call) {
  throw Error(status_for_result(result),
              fmt::format("{} failed: {}", call, describe_result(result)));
}

void throw_missing_symbol(const char* name) {
  throw_error(Status::cuda, "the CUDA driver does not export {}; a newer NVIDIA driver is needed",
              name);
}

}  // namespace attnjit::driver
