#include "runtime/cuda_context.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "attnjit/fwd_params.cuh"
#include "attnjit/sm90_fwd_params.cuh"
#include "codegen/variant_source.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "driver/cuda_driver.hpp"
#include "driver/watchdog_record.hpp"
#include "runtime/parameter_layout.hpp"

namespace attnjit::cuda {
namespace {

// Note: CU_STREAM_PER_THREAD is one handle for a different stream in every thread, so its
// workspaces are per thread too; every other handle names one stream whichever thread uses it.
using WorkspaceKey = std::pair<CUstream, std::thread::id>;

WorkspaceKey workspace_key(CUstream stream) {
  return {stream, stream == CU_STREAM_PER_THREAD ? std::this_thread::get_id() : std::thread::id()};
}

struct ContextState {
  CUcontext context = nullptr;
  std::mutex mutex;  // guards the maps, not the workspaces' contents
  std::map<std::string, std::unique_ptr<LoadedKernel>> kernels;
  std::map<std::string, CUmodule> modules;
  std::map<WorkspaceKey, std::unique_ptr<Workspace>> workspaces;
};

// Note: never destroyed before exit; its destructor (release_resources) runs while the driver
// library is still mapped, because the driver is never dlclose'd. Errors at that point (the
// context already destroyed by the application) are ignored.
class Registry {
 public:
  ~Registry() { release(); }

  ContextState& state(const ContextRef& ref) {
    std::lock_guard lock(mutex_);
    auto& slot = contexts_[ref.id];
    if (!slot) {
      slot = std::make_unique<ContextState>();
      slot->context = ref.context;
    }
    return *slot;
  }

  // Device `device`'s primary context, retained once per process under the lock so that two
  // threads racing here retain it once.
  CUcontext primary(CUdevice device) {
    std::lock_guard lock(mutex_);
    if (const auto found = primary_.find(device); found != primary_.end()) return found->second;
    CUcontext context = nullptr;
    ATTNJIT_CU(cuDevicePrimaryCtxRetain, &context, device);
    primary_.emplace(device, context);
    return context;
  }

  void release() noexcept {
    std::lock_guard lock(mutex_);
    if (contexts_.empty() || !driver::driver_available()) return;
    const driver::DriverApi& d = driver::api();
    CUcontext previous = nullptr;
    if (d.cuCtxGetCurrent != nullptr) d.cuCtxGetCurrent(&previous);
    for (auto& [id, state] : contexts_) {
      std::lock_guard state_lock(state->mutex);
      if (d.cuCtxSetCurrent == nullptr || d.cuCtxSetCurrent(state->context) != CUDA_SUCCESS) {
        continue;
      }
      for (auto& [key, workspace] : state->workspaces) {
        if (workspace->data != 0 && d.cuMemFree != nullptr) d.cuMemFree(workspace->data);
      }
      for (auto& [key, module] : state->modules) {
        if (d.cuModuleUnload != nullptr) d.cuModuleUnload(module);
      }
    }
    contexts_.clear();
    if (d.cuCtxSetCurrent != nullptr) d.cuCtxSetCurrent(previous);
  }

 private:
  std::mutex mutex_;
  std::map<unsigned long long, std::unique_ptr<ContextState>> contexts_;
  std::map<CUdevice, CUcontext> primary_;  // retained by attnjit, kept until exit
};

Registry& registry() {
  static Registry instance;
  return instance;
}

int device_attribute(CUdevice device, CUdevice_attribute attribute) {
  int value = 0;
  ATTNJIT_CU(cuDeviceGetAttribute, &value, attribute, device);
  return value;
}

// Note: the host fills kernelParams from these types, so they must be the kernel's exact
// parameter list: attnjit_fwd(const FwdParams) (sm80 family) or attnjit_fwd(const Sm90FwdParams)
// (sm90), attnjit_tensor_summary(const int*, int, int, int, int*, int*),
// attnjit_split_combine(const SplitCombineParams).
constexpr ParamSlot kForwardParams[] = {{0, sizeof(FwdParams)}};
constexpr ParamSlot kCombineParams[] = {{0, sizeof(SplitCombineParams)}};
constexpr ParamSlot kSm90ForwardParams[] = {{0, sizeof(Sm90FwdParams)}};
constexpr ParamSlot kSummaryParams[] = {{0, 8}, {8, 4}, {12, 4}, {16, 4}, {24, 8}, {32, 8}};
static_assert(sizeof(FwdParams) <= 4096, "FwdParams must fit the 4 KB kernel-parameter limit");
static_assert(sizeof(Sm90FwdParams) <= 4096,
              "Sm90FwdParams must fit the 4 KB kernel-parameter limit");

// The kernel's parameter list as the driver sees it (cuFuncGetParamInfo, CUDA 12.4+) against the
// host's (parameter_layout_mismatch: sizes and distances, offsets from parameter 0): a mismatch (a
// FwdParams laid out differently by NVRTC and the host compiler, a changed entry signature)
// becomes an internal error instead of a kernel reading garbage.
// Note: only the N parameters the host passes are asked for. Asking for index N to find the end
// is an error the driver reports (CUDA_ERROR_INVALID_VALUE), which compute-sanitizer counts on
// every run, and the driver offers no parameter count; an extra trailing parameter is ruled out by
// the generated entry points instead (codegen writes both signatures).
template <std::size_t N>
void check_parameter_layout(const std::string& key, CUfunction function,
                            const ParamSlot (&expected)[N]) {
  const driver::DriverApi& d = driver::api();
  if (d.cuFuncGetParamInfo == nullptr) return;  // older driver: nothing to ask
  ParamSlot reported[N];
  for (std::size_t i = 0; i < N; ++i) {
    const CUresult result =
        d.cuFuncGetParamInfo(function, i, &reported[i].offset, &reported[i].size);
    if (result != CUDA_SUCCESS && i == 0) {
      // Note: treated as "no parameter information" (a driver or image without it), not as a
      // mismatch: the check is a guard, never the reason a correct kernel cannot run.
      log().debug("kernel {}: cuFuncGetParamInfo: {}", key, driver::describe_result(result));
      return;
    }
    if (result != CUDA_SUCCESS) {
      throw_error(Status::internal,
                  "kernel {}: parameter {} is missing ({}); the host passes {} parameter(s)", key,
                  i, driver::describe_result(result), N);
    }
  }
  if (const auto mismatch = parameter_layout_mismatch(expected, reported)) {
    throw_error(Status::internal, "kernel {}: {}", key, *mismatch);
  }
}

// Cubins and PTX images are cached by key; an image without one is keyed by its bytes.
std::string module_key(const KernelBinary& kernel) {
  if (!kernel.key.empty()) return kernel.arch + "/" + kernel.key;
  const std::string_view bytes(kernel.image.data(), kernel.image.size());
  return fmt::format("{}/image-{:016x}-{}", kernel.arch, std::hash<std::string_view>{}(bytes),
                     kernel.image.size());
}

}  // namespace

ContextRef current_context() {
  const driver::DriverApi& d = driver::api();
  ContextRef ref;
  ATTNJIT_CU(cuCtxGetCurrent, &ref.context);
  if (ref.context == nullptr) {
    int count = 0;
    ATTNJIT_CU(cuDeviceGetCount, &count);
    if (count == 0) throw_error(Status::no_device, "no CUDA device: cuDeviceGetCount returned 0");
    ATTNJIT_CU(cuDeviceGet, &ref.device, 0);
    const CUcontext primary = registry().primary(ref.device);
    ATTNJIT_CU(cuCtxSetCurrent, primary);
    ref.context = primary;
  } else {
    ATTNJIT_CU(cuCtxGetDevice, &ref.device);
  }
  if (d.cuCtxGetId != nullptr) {
    ATTNJIT_CU(cuCtxGetId, ref.context, &ref.id);
  } else {
    // Note: drivers before CUDA 12.0 have no context ids; a destroyed context's handle may be
    // reused, so there the application must call release_resources() after destroying one.
    ref.id = reinterpret_cast<std::uintptr_t>(ref.context);
  }
  return ref;
}

DeviceInfo query_device(CUdevice device) {
  DeviceInfo info;
  info.ordinal = static_cast<int>(device);
  char name[256] = {};
  ATTNJIT_CU(cuDeviceGetName, name, static_cast<int>(sizeof name - 1), device);
  info.name = name;
  const int major = device_attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = device_attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm = major * 10 + minor;
  info.smem_optin_bytes =
      device_attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info.multiprocessors = device_attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.l2_bytes = device_attribute(device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  if (info.sm < 80) {
    throw_error(Status::unsupported,
                "attention kernels need compute capability 8.0 or newer; device {} is {}.{}",
                info.ordinal, major, minor);
  }
  return info;
}

namespace {

// The carveout hint of one entry; a refusal (a hint) is logged, not raised.
void set_carveout(CUfunction function, const char* entry, int carveout) {
  const CUresult result = driver::api().cuFuncSetAttribute(
      function, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, carveout);
  if (result != CUDA_SUCCESS) {
    log().debug("{}: the shared-memory carveout hint {} was refused: {}", entry, carveout,
                driver::describe_result(result));
  }
}

// A kernel built for several resident blocks per SM (__launch_bounds__'s second argument: the
// sm80 kernel's 64-row and decoding blocks, the sm90 kernel's two blocks per SM) asks for the
// largest shared-memory carveout, since the driver's own choice may leave room for one block only
// (use_carveout keeps it so under either rule). Then, where the driver can say, a device that
// still fits fewer blocks than the kernel was built for is reported: its registers were capped
// for an occupancy it does not get.
void configure_residency(const std::string& key, const char* entry, CUfunction function,
                         int smem_bytes, int threads, int blocks_per_sm, const DeviceInfo& device) {
  if (blocks_per_sm <= 1) return;
  const driver::DriverApi& d = driver::api();
  set_carveout(function, entry, CU_SHAREDMEM_CARVEOUT_MAX_SHARED);
  if (d.cuOccupancyMaxActiveBlocksPerMultiprocessor == nullptr) return;
  int resident = 0;
  if (d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&resident, function, threads,
                                                    static_cast<std::size_t>(smem_bytes)) !=
      CUDA_SUCCESS) {
    return;
  }
  if (resident < blocks_per_sm) {
    log().warn("kernel {} ({}) was built for {} blocks per SM, but {} (sm_{}) fits {} of its "
               "{}-thread blocks with {} bytes of shared memory: expect lower speed",
               key, entry, blocks_per_sm, device.name, device.sm, resident, threads, smem_bytes);
  }
}

// Opts a forward entry in to its dynamic shared memory and checks that it can launch `threads`
// threads a block. Static and dynamic shared memory share the opt-in limit, on which
// cuFuncSetAttribute would only say CUDA_ERROR_INVALID_VALUE, so the check comes first.
void configure_entry(const std::string& key, const char* entry, CUfunction function,
                     int smem_bytes, int threads, int blocks_per_sm, const DeviceInfo& device) {
  int static_smem = 0;
  ATTNJIT_CU(cuFuncGetAttribute, &static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function);
  if (static_smem + smem_bytes > device.smem_optin_bytes) {
    throw_error(Status::unsupported,
                "kernel {} ({}) needs {} bytes of dynamic and {} of static shared memory per "
                "block; {} (sm_{}) allows {} in all",
                key, entry, smem_bytes, static_smem, device.name, device.sm,
                device.smem_optin_bytes);
  }
  ATTNJIT_CU(cuFuncSetAttribute, function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
             smem_bytes);
  int max_threads = 0;
  ATTNJIT_CU(cuFuncGetAttribute, &max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function);
  if (threads > max_threads) {
    throw_error(Status::unsupported,
                "kernel {} ({}) launches {} threads per block but uses too many registers for "
                "more than {} on {}",
                key, entry, threads, max_threads, device.name);
  }
  configure_residency(key, entry, function, smem_bytes, threads, blocks_per_sm, device);
}

}  // namespace

const LoadedKernel& load_kernel(const ContextRef& context, const DeviceInfo& device,
                                const KernelBinary& kernel) {
  ContextState& state = registry().state(context);
  const std::string key = module_key(kernel);
  std::lock_guard lock(state.mutex);
  if (const auto found = state.kernels.find(key); found != state.kernels.end()) {
    return *found->second;
  }
  if (kernel.image.empty()) throw_error(Status::internal, "kernel {} has an empty image", key);
  const codegen::KernelConfig& config = kernel.config;
  if (config.block_m <= 0 || config.block_n <= 0 || config.num_warps <= 0 ||
      config.smem_bytes < 0) {
    throw_error(Status::internal,
                "kernel {} has an invalid configuration: block_m={} block_n={} num_warps={} "
                "smem_bytes={}",
                key, config.block_m, config.block_n, config.num_warps, config.smem_bytes);
  }
  if (config.smem_bytes > device.smem_optin_bytes) {
    throw_error(Status::unsupported,
                "kernel {} needs {} bytes of shared memory per block; {} (sm_{}) allows {}", key,
                config.smem_bytes, device.name, device.sm, device.smem_optin_bytes);
  }

  // Note: PTX must reach the driver NUL-terminated; a cubin is passed as is.
  std::vector<char> ptx;
  const void* image = kernel.image.data();
  if (kernel.is_ptx && kernel.image.back() != '\0') {
    ptx.assign(kernel.image.begin(), kernel.image.end());
    ptx.push_back('\0');
    image = ptx.data();
  }
  const driver::DriverApi& d = driver::api();
  // Note: a module whose set-up failed below stays loaded and owned by `state.modules`; a retry
  // reuses it instead of loading (and leaking) a second copy.
  CUmodule module = nullptr;
  if (const auto found = state.modules.find(key); found != state.modules.end()) {
    module = found->second;
  } else {
    if (d.cuModuleLoadData == nullptr) driver::throw_missing_symbol("cuModuleLoadData");
    if (const CUresult result = d.cuModuleLoadData(&module, image); result != CUDA_SUCCESS) {
      throw Error(driver::status_for_result(result),
                  fmt::format("cuModuleLoadData failed for kernel {} ({}) on {} (sm_{}): {}{}", key,
                              kernel.arch, device.name, device.sm, driver::describe_result(result),
                              driver::capture_hint(result)));
    }
    state.modules.emplace(key, module);
  }

  auto loaded = std::make_unique<LoadedKernel>();
  ATTNJIT_CU(cuModuleGetFunction, &loaded->forward, module, codegen::kForwardEntry);
  if (d.cuModuleGetFunction(&loaded->summary, module, codegen::kSummaryEntry) != CUDA_SUCCESS) {
    loaded->summary = nullptr;
  }
  if (config.family == codegen::KernelFamily::sm90) {
    check_parameter_layout(key, loaded->forward, kSm90ForwardParams);
  } else {
    check_parameter_layout(key, loaded->forward, kForwardParams);
  }
  if (loaded->summary != nullptr) check_parameter_layout(key, loaded->summary, kSummaryParams);
  if (codegen::has_split_combine(config)) {
    ATTNJIT_CU(cuModuleGetFunction, &loaded->combine, module, codegen::kSplitCombineEntry);
    check_parameter_layout(key, loaded->combine, kCombineParams);
  }
  // Note: before the first launch, since a watchdog's fault surfaces in whichever driver call
  // comes next and that call's error reads the record.
  if (config.watchdog_ms > 0) driver::attach_watchdog_record(module);

  configure_entry(key, codegen::kForwardEntry, loaded->forward, config.smem_bytes,
                  config.num_warps * 32, config.blocks_per_sm, device);
  loaded->forward_blocks_per_sm = config.blocks_per_sm;
  if (config.decode_block_n > 0) {
    const codegen::KernelConfig decode = codegen::decode_config(config);
    loaded->decode_blocks_per_sm = decode.blocks_per_sm;
    ATTNJIT_CU(cuModuleGetFunction, &loaded->decode, module, codegen::kDecodeEntry);
    check_parameter_layout(key, loaded->decode, kForwardParams);
    configure_entry(key, codegen::kDecodeEntry, loaded->decode, decode.smem_bytes,
                    decode.num_warps * 32, decode.blocks_per_sm, device);
  }
  log().debug("loaded kernel {} on {} (context {})", key, device.name, context.id);
  return *state.kernels.emplace(key, std::move(loaded)).first->second;
}

void use_carveout(const LoadedKernel& loaded, bool uniform) {
  const int rule = uniform ? 1 : 0;
  // A plain load first: every call comes here, and the rule changes only when ATTNJIT_CARVEOUT
  // does, so the common case must not write the shared cache line.
  if (loaded.carveout_rule.load(std::memory_order_relaxed) == rule ||
      loaded.carveout_rule.exchange(rule, std::memory_order_relaxed) == rule) {
    return;
  }
  const auto carveout = [&](int blocks_per_sm) {
    return uniform || blocks_per_sm > 1 ? CU_SHAREDMEM_CARVEOUT_MAX_SHARED
                                        : CU_SHAREDMEM_CARVEOUT_DEFAULT;
  };
  const struct {
    CUfunction function;
    const char* name;
    int blocks_per_sm;
  } entries[] = {{loaded.forward, codegen::kForwardEntry, loaded.forward_blocks_per_sm},
                 {loaded.decode, codegen::kDecodeEntry, loaded.decode_blocks_per_sm},
                 {loaded.summary, codegen::kSummaryEntry, 1},
                 {loaded.combine, codegen::kSplitCombineEntry, 1}};
  for (const auto& entry : entries) {
    if (entry.function != nullptr) {
      set_carveout(entry.function, entry.name, carveout(entry.blocks_per_sm));
    }
  }
}

std::pair<Workspace*, std::unique_lock<std::mutex>> acquire_workspace(const ContextRef& context,
                                                                      CUstream stream,
                                                                      std::size_t bytes) {
  ContextState& state = registry().state(context);
  Workspace* workspace = nullptr;
  {
    std::lock_guard lock(state.mutex);
    auto& slot = state.workspaces[workspace_key(stream)];
    if (!slot) slot = std::make_unique<Workspace>();
    workspace = slot.get();
  }
  std::unique_lock lock(workspace->mutex);
  if (workspace->bytes < bytes) {
    const std::size_t old_bytes = workspace->bytes;
    if (workspace->data != 0) {
      ATTNJIT_CU(cuStreamSynchronize, stream);
      const CUdeviceptr old = workspace->data;
      workspace->data = 0;
      workspace->bytes = 0;
      ATTNJIT_CU(cuMemFree, old);
    }
    // Note: doubling keeps growth rare when lengths creep up call after call.
    const std::size_t grown = std::max<std::size_t>(bytes, 2 * old_bytes);
    const std::size_t size = std::max<std::size_t>(grown, 4096);
    ATTNJIT_CU(cuMemAlloc, &workspace->data, size);
    workspace->bytes = size;
  }
  return {workspace, std::move(lock)};
}

void release_resources() noexcept { registry().release(); }

}  // namespace attnjit::cuda
