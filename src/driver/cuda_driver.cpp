#include "driver/cuda_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>
#include <variant>

#include "common/log.hpp"
#include "driver/watchdog_record.hpp"

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

#define ATTNJIT_DRIVER_STRINGIFY_EXPANDED(x) ATTNJIT_DRIVER_STRINGIFY(x)
#define ATTNJIT_DRIVER_STRINGIFY(x) #x

// Note: the pinned version of every entry must give the type cuda.h declares for the function
// (after its macros), or the table would call a function with another ABI than the call sites
// assume. A wrong version in the table is a compile error here, not a crash on a GPU.
#define ATTNJIT_CHECK_DRIVER_ABI(name, version)                             \
  static_assert(std::is_same_v<PFN_##name##_v##version, decltype(&::name)>, \
                "ATTNJIT_CUDA_DRIVER_FUNCTIONS: " #name " v" #version       \
                " is not the ABI "                                          \
                "cuda.h declares");
ATTNJIT_CUDA_DRIVER_FUNCTIONS(ATTNJIT_CHECK_DRIVER_ABI)
#undef ATTNJIT_CHECK_DRIVER_ABI

template <typename Function>
void resolve_by_symbol(void* handle, const char* symbol, Function& out) {
  out = reinterpret_cast<Function>(dlsym(handle, symbol));
}

// cuGetProcAddress(base name, pinned version, legacy default stream): the documented way to get
// a given ABI of a driver function (CUDA Driver API, "Driver Entry Point Access"). It answers
// CUDA_ERROR_INVALID_VALUE when the version is newer than the driver, and CUDA_SUCCESS with a
// null pointer when no ABI-compatible function exists; dlsym of the exported versioned symbol
// (ABI-exact by its name) is the fallback in both cases and for drivers before CUDA 12.0.
template <typename Function>
void resolve(PFN_cuGetProcAddress_v12000 get_proc_address, void* handle, const char* base,
             int version, const char* symbol, Function& out) {
  out = nullptr;
  if (get_proc_address != nullptr) {
    void* pointer = nullptr;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get_proc_address(base, &pointer, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) ==
            CUDA_SUCCESS &&
        found == CU_GET_PROC_ADDRESS_SUCCESS && pointer != nullptr) {
      out = reinterpret_cast<Function>(pointer);
      return;
    }
  }
  resolve_by_symbol(handle, symbol, out);
}

std::shared_ptr<const DriverApi> load_driver_impl(const std::string& path, DriverLoadState& state) {
  state = {};
  void* handle = open_library(path);
  auto table = std::make_shared<DriverApi>();
  table->library_path = path;
  // Only these are looked up before cuInit: their exported names have one ABI each.
  resolve_by_symbol(handle, "cuInit", table->cuInit);
  resolve_by_symbol(handle, "cuGetErrorName", table->cuGetErrorName);
  resolve_by_symbol(handle, "cuGetErrorString", table->cuGetErrorString);
  resolve_by_symbol(handle, "cuDriverGetVersion", table->cuDriverGetVersion);
  if (table->cuInit == nullptr) {
    throw_error(Status::no_device,
                "CUDA driver at {} does not export cuInit; it is not a usable libcuda", path);
  }
  state.library_found = true;
  const CUresult init = table->cuInit(0);
  state.init_result = init;
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

  PFN_cuGetProcAddress_v12000 get_proc_address = nullptr;
  resolve_by_symbol(handle, "cuGetProcAddress_v2", get_proc_address);
  table->used_get_proc_address = get_proc_address != nullptr;
#define ATTNJIT_RESOLVE_DRIVER_FUNCTION(name, version)                                       \
  resolve(get_proc_address, handle, #name, version, ATTNJIT_DRIVER_STRINGIFY_EXPANDED(name), \
          table->name);
  ATTNJIT_CUDA_DRIVER_FUNCTIONS(ATTNJIT_RESOLVE_DRIVER_FUNCTION)
#undef ATTNJIT_RESOLVE_DRIVER_FUNCTION

  log().debug("loaded CUDA driver {} (version {}, entry points from {})", path,
              table->driver_version, get_proc_address != nullptr ? "cuGetProcAddress" : "dlsym");
#define ATTNJIT_REPORT_MISSING_FUNCTION(name, version)                             \
  if (table->name == nullptr) {                                                    \
    log().debug("CUDA driver {} lacks {} (ABI of CUDA {})", path, #name, version); \
  }
  ATTNJIT_CUDA_DRIVER_FUNCTIONS(ATTNJIT_REPORT_MISSING_FUNCTION)
#undef ATTNJIT_REPORT_MISSING_FUNCTION
  return table;
}

}  // namespace

std::string driver_library_path() {
  const char* env = std::getenv("ATTNJIT_CUDA_DRIVER");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(kDefaultLibrary);
}

std::shared_ptr<const DriverApi> load_driver(const std::string& path) {
  DriverLoadState state;
  return load_driver_impl(path, state);
}

namespace {

using LoadResult = std::variant<std::shared_ptr<const DriverApi>, Error>;

struct ProcessDriver {
  LoadResult result;
  DriverLoadState state;
};

const ProcessDriver& process_driver() {
  static const ProcessDriver driver = [] {
    ProcessDriver loaded{Error(Status::internal, "not loaded"), {}};
    try {
      loaded.result = load_driver_impl(driver_library_path(), loaded.state);
    } catch (const Error& error) {
      log().debug("{}", error.what());
      loaded.result = error;
    }
    return loaded;
  }();
  return driver;
}

}  // namespace

const DriverApi& api() {
  const LoadResult& result = process_driver().result;
  if (const auto* error = std::get_if<Error>(&result)) throw *error;
  return *std::get<std::shared_ptr<const DriverApi>>(result);
}

bool driver_available() { return process_driver().result.index() == 0; }

DriverLoadState driver_load_state() { return process_driver().state; }

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

std::string capture_hint(CUresult result) {
  switch (result) {
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
      return "; a stream is capturing into a CUDA graph, which forbids this: prepare the variant "
             "(attnjit_variant_prepare, in this context) before capturing, so that every kernel "
             "its calls run is compiled and loaded outside the capture";
    default:
      return "";
  }
}

void throw_result(CUresult result, const char* call) {
  throw Error(status_for_result(result),
              fmt::format("{} failed: {}{}{}", call, describe_result(result), capture_hint(result),
                          watchdog_hint(result)));
}

void throw_missing_symbol(const char* name) {
  throw_error(Status::cuda, "the CUDA driver does not export {}; a newer NVIDIA driver is needed",
              name);
}

}  // namespace attnjit::driver
