// A stand-in libcuda for machines without a GPU: the entry points the CUDA backend resolves
// (through cuGetProcAddress, like the real driver), with host memory as "device" memory. Loaded by
// tests through ATTNJIT_CUDA_DRIVER, so the backend's whole driver path runs unchanged: context
// handling, pointer checks, module loading, parameter-layout checks, workspaces, launches.
//
// Launches run under the SIMT emulator, synchronously, so that later launches and copies see
// their results: through the launcher a test installed (attnjit_fake_cuda_set_launcher), or else
// by the fake itself, which finds the loaded cubin in the kernel cache ($ATTNJIT_CACHE_DIR),
// regenerates its source from the sidecar's variant and builds it for the host. So any program
// (the CLI, the C API) runs on the fake device with real results. The one other module it runs
// is the Hopper probes' (tests/support/hopper_probe_kernels.hpp), so that test_gpu's probe runner
// is exercised here too. The device it pretends to be is set by
// ATTNJIT_FAKE_CUDA_SM (default 90; e.g. 75 for a device attnjit must refuse) and
// ATTNJIT_FAKE_CUDA_DEVICES (default 1; 0 makes cuInit answer CUDA_ERROR_NO_DEVICE).
// ATTNJIT_FAKE_CUDA_LAUNCHES=skip checks and counts launches but runs none (outputs keep what
// they held): a program then compiles every kernel it would use, and nothing more, which is how
// tools/gpu-bundle.sh fills a GPU machine's kernel cache without a GPU.
// ATTNJIT_FAKE_CUDA_OCCUPANCY=N makes cuOccupancyMaxActiveBlocksPerMultiprocessor answer N (a
// device that fits fewer blocks than a kernel was built for).
#include "fake_cuda.h"

#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "attnjit/fwd_params.cuh"
#include "attnjit/sm90_fwd_params.cuh"
#include "attnjit/sm90_watchdog_record.cuh"
#include "attnjit_simt/fake_tensor_map.hpp"
#include "codegen/kernel_tuning.hpp"
#include "codegen/variant_source.hpp"
#include "expr/expression.hpp"
#include "expr/signature.hpp"
#include "simt_module.hpp"
#include "support/hopper_probe_kernels.hpp"

namespace {

// Note: few SMs, so that a persistent kernel's blocks (one per SM) each walk several work items
// in the tests.
constexpr int kFakeMultiprocessors = 4;

struct Allocation {
  std::size_t bytes;
  bool managed;
};

struct Module;

// ---- Stream capture. A capturing stream records its launches, memsets and copies instead of
// running them; cuStreamEndCapture hands them over as a graph, which cuGraphLaunch runs in order,
// as often as asked. Memory that cuMemAllocAsync gives out during a capture belongs to the graph
// (its address fixed, as a real graph's allocation node's is) and is freed with it; its
// cuMemFreeAsync within the capture does nothing. What CUDA forbids while a stream captures in
// global mode (synchronising, a synchronous copy or memset) fails with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, as there.
struct Graph {
  std::vector<std::function<CUresult()>> operations;
  std::vector<CUdeviceptr> allocations;
  bool invalidated = false;
};

struct GraphExec {
  const Graph* graph = nullptr;
};

struct Function {
  std::string name;
  Module* module = nullptr;
  int max_dynamic_smem = 0;
  int carveout = CU_SHAREDMEM_CARVEOUT_DEFAULT;
};

struct Module {
  std::vector<std::unique_ptr<Function>> functions;  // handed out by cuModuleGetFunction
  std::string source;  // the generated kernel source, when found in the cache
  bool probes = false;  // the Hopper probes: any entry name, each taking FwdParams
  std::unique_ptr<attnjit::simt::SimtModule> emulated;  // built at the first launch
  bool has_watchdog_global = false;  // the image names ATTNJIT_SM90_WATCHDOG_SYMBOL
  std::map<std::string, CUdeviceptr> globals;  // handed out by cuModuleGetGlobal
};

struct State {
  std::mutex mutex;
  std::map<std::uintptr_t, Allocation> allocations;
  int context_tag = 0;  // the one context's handle points here
  AttnjitFakeLauncher launcher = nullptr;
  void* launcher_user = nullptr;
  int launches = 0;
  int programmatic_launches = 0;  // of them, through cuLaunchKernelEx's programmatic attribute
  // The module global of each name handed out last (attnjit_fake_cuda_module_global).
  std::map<std::string, CUdeviceptr> last_globals;
  // cuFuncGetParamInfo calls for an index past the last parameter: the real driver answers them
  // with CUDA_ERROR_INVALID_VALUE and compute-sanitizer reports each one.
  std::atomic<int> param_info_past_end{0};
  // The streams capturing into a graph, and what each has recorded so far.
  std::map<CUstream, std::unique_ptr<Graph>> captures;
};

// Note: never destroyed, because the backend frees its workspaces and modules from static
// destructors at exit, which may run after this library's would have.
State& state() {
  static State* instance = new State;
  return *instance;
}

thread_local CUcontext current_context = nullptr;

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

int fake_sm() { return env_int("ATTNJIT_FAKE_CUDA_SM", 90); }

bool skip_launches() {
  static const bool skip = [] {
    const char* value = std::getenv("ATTNJIT_FAKE_CUDA_LAUNCHES");
    return value != nullptr && std::string_view(value) == "skip";
  }();
  return skip;
}

int smem_optin(int sm) {
  if (sm == 90 || sm == 100) return 227 * 1024;
  if (sm == 80 || sm == 87) return 163 * 1024;
  return 99 * 1024;
}

// Shared memory an SM has for blocks at the largest carveout: the opt-in limit plus the 1 KB the
// driver reserves per block.
int smem_per_sm(int sm) { return smem_optin(sm) + 1024; }

CUcontext the_context() { return reinterpret_cast<CUcontext>(&state().context_tag); }

// The allocation containing [address, address + 1), or end().
std::map<std::uintptr_t, Allocation>::iterator find_allocation(std::uintptr_t address) {
  auto& all = state().allocations;
  auto it = all.upper_bound(address);
  if (it == all.begin()) return all.end();
  --it;
  return address < it->first + it->second.bytes ? it : all.end();
}

CUresult allocate(CUdeviceptr* out, std::size_t bytes, bool managed) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Note: 256-byte aligned and rounded up, like cuMemAlloc.
  void* memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(state().mutex);
  state().allocations[reinterpret_cast<std::uintptr_t>(memory)] = {bytes, managed};
  *out = reinterpret_cast<CUdeviceptr>(memory);
  return CUDA_SUCCESS;
}

CUresult release(CUdeviceptr pointer) {
  std::lock_guard lock(state().mutex);
  auto& all = state().allocations;
  const auto it = all.find(static_cast<std::uintptr_t>(pointer));
  if (it == all.end()) return CUDA_ERROR_INVALID_VALUE;
  std::free(reinterpret_cast<void*>(it->first));
  all.erase(it);
  return CUDA_SUCCESS;
}

// The capture `stream` records into, or null when it is not capturing.
Graph* capture_of(CUstream stream) {
  std::lock_guard lock(state().mutex);
  const auto it = state().captures.find(stream);
  return it == state().captures.end() ? nullptr : it->second.get();
}

// A call that CUDA forbids while any stream captures (global mode): CUDA_SUCCESS when none does;
// otherwise every capture is invalidated and the call fails.
CUresult forbidden_during_capture() {
  std::lock_guard lock(state().mutex);
  if (state().captures.empty()) return CUDA_SUCCESS;
  for (auto& [stream, graph] : state().captures) graph->invalidated = true;
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

void fill_words(CUdeviceptr dst, unsigned value, std::size_t count) {
  auto* words = reinterpret_cast<unsigned*>(dst);
  for (std::size_t i = 0; i < count; ++i) words[i] = value;
}

// Bytes of a 64-bit ELF image (a cubin), from its header: the section header table ends it.
std::size_t elf_size(const unsigned char* image) {
  auto read = [&](std::size_t offset, std::size_t bytes) {
    std::uint64_t value = 0;
    std::memcpy(&value, image + offset, bytes);
    return value;
  };
  const std::uint64_t sections_end = read(0x28, 8) + read(0x3C, 2) * read(0x3A, 2);
  const std::uint64_t programs_end = read(0x20, 8) + read(0x38, 2) * read(0x36, 2);
  return static_cast<std::size_t>(std::max(sections_end, programs_end));
}

// Whether the image (a cubin or NUL-terminated PTX) contains `text`, e.g. a symbol's name.
bool image_contains(const char* image, const char* text) {
  const std::size_t size = std::memcmp(image, "\x7f" "ELF", 4) == 0
                               ? elf_size(reinterpret_cast<const unsigned char*>(image))
                               : std::strlen(image);
  const std::string_view haystack(image, size);
  return haystack.find(text) != std::string_view::npos;
}

// The tuning under which generation gives a sidecar's recorded configuration: ATTNJIT_TUNE's
// (what the sm80 kernel and the score's row shift were generated with), with the sm90 kernel's
// recorded tiles and schedule in place of its overrides, since the runtime also generates sm90
// kernels under a tuning of its own (the short-rows kernel, codegen/short_rows.hpp).
attnjit::codegen::KernelTuning recorded_tuning(const nlohmann::json& config) {
  attnjit::codegen::KernelTuning tuning = attnjit::codegen::kernel_tuning_from_environment();
  if (config.value("family", std::string("sm80")) != "sm90") return tuning;
  tuning.sm90_block_m = config.value("block_m", 0);
  tuning.sm90_block_n = config.value("block_n", 0);
  tuning.sm90_stages = config.value("num_stages", 0);
  tuning.sm90_overlap = config.value("overlap", false);
  tuning.sm90_persistent = config.value("persistent", false);
  tuning.sm90_p_smem = config.value("p_in_smem", false);
  tuning.sm90_handoff = config.value("tile_handoff", false);
  tuning.sm90_poly_exp2 = config.value("poly_exp2", 0);
  tuning.sm90_fold_m192 = config.value("fold_m192", false);
  tuning.sm90_blocks_per_sm = config.value("blocks_per_sm", 1);
  tuning.sm90_watchdog_ms = config.value("watchdog_ms", 0);
  return tuning;
}

// The kernel source of a cubin that the cache under $ATTNJIT_CACHE_DIR holds: its sidecar's
// variant, parsed and generated again (generation is deterministic). Empty when not found.
std::string find_source(const unsigned char* image) {
  const char* dir = std::getenv("ATTNJIT_CACHE_DIR");
  if (dir == nullptr || *dir == '\0' || std::memcmp(image, "\x7f" "ELF", 4) != 0) return {};
  const std::size_t size = elf_size(image);
  std::error_code error;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, error)) {
    if (entry.path().extension() != ".cubin" || entry.file_size(error) != size) continue;
    std::ifstream file(entry.path(), std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(file), {}};
    if (bytes.size() != size || std::memcmp(bytes.data(), image, size) != 0) continue;
    std::ifstream sidecar_file(std::filesystem::path(entry.path()).replace_extension(".json"));
    const nlohmann::json sidecar = nlohmann::json::parse(sidecar_file, nullptr, false);
    if (sidecar.is_discarded()) return {};
    const nlohmann::json& variant = sidecar["variant"];
    attnjit::expr::Signature signature;
    for (const auto& param : variant["params"]) {
      signature.params.push_back(attnjit::expr::parse_param_decl(param.get<std::string>()));
    }
    for (const auto& tensor : variant["tensors"]) {
      signature.tensors.push_back(attnjit::expr::parse_tensor_decl(tensor.get<std::string>()));
    }
    using attnjit::expr::ExprKind;
    const auto mask = attnjit::expr::parse_expression(
        ExprKind::mask, variant["mask"].get<std::string>(), signature);
    const auto score = attnjit::expr::parse_expression(
        ExprKind::score, variant["score"].get<std::string>(), signature);
    const attnjit::DType dtype =
        variant["dtype"] == "fp16" ? attnjit::DType::fp16 : attnjit::DType::bf16;
    // The arch ("sm_90a") and family the kernel was generated for, so that the same source
    // comes out whatever ATTNJIT_KERNEL_FAMILY says now.
    const std::string arch = sidecar["arch"].get<std::string>();
    const attnjit::codegen::Target target(std::atoi(arch.c_str() + 3), arch.ends_with('a'));
    const auto family = sidecar["config"].value("family", std::string("sm80")) == "sm90"
                            ? attnjit::codegen::FamilyRequest::sm90
                            : attnjit::codegen::FamilyRequest::sm80;
    return attnjit::codegen::generate_kernel_source(mask, score, dtype,
                                                    variant["head_dim"].get<int>(), target, family,
                                                    recorded_tuning(sidecar["config"]))
        .source;
  }
  return {};
}

std::vector<SimtRegion> device_regions() {
  std::lock_guard lock(state().mutex);
  std::vector<SimtRegion> regions;
  for (const auto& [address, allocation] : state().allocations) {
    regions.push_back({reinterpret_cast<const void*>(address), allocation.bytes, 1});
  }
  return regions;
}

// Runs a launch of a module whose source was found, building it for the host first.
CUresult emulate(Function& function, const attnjit::LaunchGrid& grid, void** params,
                 bool programmatic) {
  // Note: one launch at a time (the emulator's state is per built module, and launches from
  // several host threads would share it); the device is synchronous anyway.
  static std::mutex launch_mutex;
  std::lock_guard serial(launch_mutex);
  Module& module = *function.module;
  if (module.source.empty()) {
    std::fprintf(stderr,
                 "fake CUDA driver: no kernel source for this module (its cubin is not in "
                 "$ATTNJIT_CACHE_DIR), so %s cannot run\n",
                 function.name.c_str());
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  try {
    if (!module.emulated) {
      static int counter = 0;
      module.emulated = std::make_unique<attnjit::simt::SimtModule>(
          std::vector<std::string>{module.source},
          std::filesystem::temp_directory_path() /
              ("attnjit-fake-cuda-" + std::to_string(::getpid()) + "-" +
               std::to_string(counter++)));
    }
    if (module.probes) {
      module.emulated->run_forward(module.emulated->symbol(function.name),
                                   *static_cast<const attnjit::FwdParams*>(params[0]), grid,
                                   device_regions(), programmatic);
    } else {
      module.emulated->run_launch(0, function.name.c_str(), grid, params, device_regions(),
                                  programmatic);
    }
    return CUDA_SUCCESS;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fake CUDA driver: %s failed: %s\n", function.name.c_str(), error.what());
    return CUDA_ERROR_LAUNCH_FAILED;
  }
}

}  // namespace

extern "C" {

// ---- The test's side.
ATTNJIT_FAKE_EXPORT void attnjit_fake_cuda_set_launcher(AttnjitFakeLauncher launcher, void* user) {
  std::lock_guard lock(state().mutex);
  state().launcher = launcher;
  state().launcher_user = user;
}

ATTNJIT_FAKE_EXPORT int attnjit_fake_cuda_allocations(AttnjitFakeRange* out, int capacity) {
  std::lock_guard lock(state().mutex);
  int count = 0;
  for (const auto& [address, allocation] : state().allocations) {
    if (count < capacity) out[count] = {reinterpret_cast<void*>(address), allocation.bytes};
    ++count;
  }
  return count;
}

ATTNJIT_FAKE_EXPORT int attnjit_fake_cuda_launch_count() { return state().launches; }
ATTNJIT_FAKE_EXPORT int attnjit_fake_cuda_programmatic_launch_count() {
  return state().programmatic_launches;
}

ATTNJIT_FAKE_EXPORT void* attnjit_fake_cuda_module_global(const char* name) {
  std::lock_guard lock(state().mutex);
  const auto found = state().last_globals.find(name);
  return found == state().last_globals.end() ? nullptr : reinterpret_cast<void*>(found->second);
}

ATTNJIT_FAKE_EXPORT int attnjit_fake_cuda_param_info_past_end() {
  return state().param_info_past_end.load();
}

// ---- Initialisation, errors, devices.
CUresult CUDAAPI cuInit(unsigned int) {
  return env_int("ATTNJIT_FAKE_CUDA_DEVICES", 1) > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; break;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case CUDA_ERROR_INVALID_IMAGE: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
    case CUDA_ERROR_NOT_SUPPORTED:
      *name = "CUDA_ERROR_NOT_SUPPORTED";
      break;
    case CUDA_ERROR_ILLEGAL_STATE:
      *name = "CUDA_ERROR_ILLEGAL_STATE";
      break;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
      *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
      break;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
      *name = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
      break;
    default: *name = "CUDA_ERROR_UNKNOWN"; break;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_LAUNCH_FAILED ? "the emulated kernel failed (see the test log)"
                                            : "fake driver error";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = env_int("ATTNJIT_FAKE_CUDA_DEVICES", 1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= env_int("ATTNJIT_FAKE_CUDA_DEVICES", 1)) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice) {
  std::snprintf(name, static_cast<std::size_t>(length), "attnjit fake device (sm_%d)", fake_sm());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  const int sm = fake_sm();
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = sm / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = sm % 10; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = smem_optin(sm); break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = kFakeMultiprocessors; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 50 * 1024 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}

// ---- One context: device 0's primary context.
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
  *context = the_context();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context) {
  *context = current_context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  current_context = context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  if (current_context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetId(CUcontext, unsigned long long* id) {
  *id = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize() { return forbidden_during_capture(); }

// ---- Modules and functions.
CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  // Loading a module while a stream captures is modelled as forbidden (CUDA's lazy loading
  // during a capture failed the same way): a capture must find its kernels loaded.
  if (const CUresult refused = forbidden_during_capture(); refused != CUDA_SUCCESS) return refused;
  // Note: the backend must hand over a cubin (an ELF image) or NUL-terminated PTX.
  const auto* bytes = static_cast<const char*>(image);
  if (image == nullptr || (std::memcmp(bytes, "\x7f" "ELF", 4) != 0 &&
                           std::strstr(bytes, ".version") == nullptr)) {
    return CUDA_ERROR_INVALID_IMAGE;
  }
  auto loaded = std::make_unique<Module>();
  loaded->has_watchdog_global = image_contains(bytes, ATTNJIT_SM90_WATCHDOG_SYMBOL_NAME);
  // Note: recognised by an entry no attnjit variant has.
  if (image_contains(bytes, "producer_consumer_ring")) {
    loaded->probes = true;
    loaded->source = attnjit::hopper_probe::kProbeKernels;
    *module = reinterpret_cast<CUmodule>(loaded.release());
    return CUDA_SUCCESS;
  }
  try {
    loaded->source = find_source(static_cast<const unsigned char*>(image));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fake CUDA driver: cannot regenerate the kernel source: %s\n",
                 error.what());
  }
  *module = reinterpret_cast<CUmodule>(loaded.release());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  auto* unloaded = reinterpret_cast<Module*>(module);
  for (const auto& [name, address] : unloaded->globals) release(address);
  delete unloaded;
  return CUDA_SUCCESS;
}
// The one global the backend asks for: the watchdog's record pointer, 8 zeroed bytes of "device"
// memory per module, when the image has it.
CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr* address, size_t* bytes, CUmodule module,
                                   const char* name) {
  auto& loaded = *reinterpret_cast<Module*>(module);
  if (std::strcmp(name, ATTNJIT_SM90_WATCHDOG_SYMBOL_NAME) != 0 || !loaded.has_watchdog_global) {
    return CUDA_ERROR_NOT_FOUND;
  }
  auto found = loaded.globals.find(name);
  if (found == loaded.globals.end()) {
    CUdeviceptr global = 0;
    if (const CUresult result = allocate(&global, sizeof(void*), false); result != CUDA_SUCCESS) {
      return result;
    }
    std::memset(reinterpret_cast<void*>(global), 0, sizeof(void*));
    found = loaded.globals.emplace(name, global).first;
    std::lock_guard lock(state().mutex);
    state().last_globals[name] = global;
  }
  if (address != nullptr) *address = found->second;
  if (bytes != nullptr) *bytes = sizeof(void*);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  // Note: the split-KV merge is in sm80-family modules only, as codegen writes them.
  const Module& found = *reinterpret_cast<Module*>(module);
  const bool combine = std::strcmp(name, "attnjit_split_combine") == 0 &&
                       found.source.find("attnjit::Sm90FwdParams") == std::string::npos;
  // Note: the decoding entry where codegen wrote one (sm80 modules with the decoding features),
  // or in any module whose source is unknown (a test's own launcher runs it).
  const bool decode = std::strcmp(name, "attnjit_fwd_decode") == 0 &&
                      (found.source.empty() ||
                       found.source.find("attnjit_fwd_decode(") != std::string::npos);
  if (std::strcmp(name, "attnjit_fwd") != 0 && std::strcmp(name, "attnjit_tensor_summary") != 0 &&
      !combine && !decode && !found.probes) {
    return CUDA_ERROR_NOT_FOUND;
  }
  auto& functions = reinterpret_cast<Module*>(module)->functions;
  functions.push_back(std::make_unique<Function>(Function{name, reinterpret_cast<Module*>(module)}));
  *function = reinterpret_cast<CUfunction>(functions.back().get());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute,
                                    int value) {
  if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value > smem_optin(fake_sm())) return CUDA_ERROR_INVALID_VALUE;
    reinterpret_cast<Function*>(function)->max_dynamic_smem = value;
  }
  if (attribute == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
    if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
    reinterpret_cast<Function*>(function)->carveout = value;
  }
  return CUDA_SUCCESS;
}
// Blocks of `threads` threads and `smem` bytes an SM holds: by shared memory at the largest
// carveout and by threads (2048), registers not counted. ATTNJIT_FAKE_CUDA_OCCUPANCY=N answers
// N instead, for the tests of what attnjit does on a device that fits fewer blocks.
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction, int threads,
                                                             size_t smem) {
  if (blocks == nullptr || threads <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (const int forced = env_int("ATTNJIT_FAKE_CUDA_OCCUPANCY", 0); forced > 0) {
    *blocks = forced;
    return CUDA_SUCCESS;
  }
  const int by_smem = smem_per_sm(fake_sm()) / static_cast<int>(smem + 1024);
  *blocks = std::max(0, std::min(by_smem, 2048 / threads));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction) {
  *value = attribute == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
  return CUDA_SUCCESS;
}
namespace {

// (offset, size) of each parameter of the entry points, as NVRTC lays them out (the same
// headers).
std::vector<std::pair<std::size_t, std::size_t>> parameter_layout(const Function& function) {
  const bool forward = function.name == "attnjit_fwd" || function.name == "attnjit_fwd_decode" ||
                       function.module->probes;
  if (function.name == "attnjit_split_combine") return {{0, sizeof(attnjit::SplitCombineParams)}};
  if (forward) {
    // The sm90 kernel takes the parameters with its tensor maps (codegen writes the signature).
    // Note: as driver 580 on an H200 answers: the 64-byte-aligned sm90 parameter block starts 48
    // bytes into the bank, after the driver's padding.
    const bool sm90 = function.module->source.find("attnjit::Sm90FwdParams") != std::string::npos;
    return {{sm90 ? 48 : 0, sm90 ? sizeof(attnjit::Sm90FwdParams) : sizeof(attnjit::FwdParams)}};
  }
  return {{0, 8}, {8, 4}, {12, 4}, {16, 4}, {24, 8}, {32, 8}};  // the tensor summary's
}

}  // namespace

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction function, size_t index, size_t* offset,
                                    size_t* size) {
  const auto layout = parameter_layout(*reinterpret_cast<Function*>(function));
  if (index >= layout.size()) {
    ++state().param_info_past_end;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *offset = layout[index].first;
  *size = layout[index].second;
  return CUDA_SUCCESS;
}

namespace {

// cuLaunchKernel and cuLaunchKernelEx: the checks the hardware's driver makes, then the test's
// launcher, or the emulator, or nothing (ATTNJIT_FAKE_CUDA_LAUNCHES=skip).
// In a capturing stream the launch is recorded with a copy of its parameters (their values at
// the call, as a kernel node keeps them) and runs at each cuGraphLaunch.
CUresult launch_kernel(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                       unsigned block_x, unsigned block_y, unsigned block_z, unsigned smem,
                       CUstream stream, void** params, void** extra, bool programmatic) {
  const Function& function = *reinterpret_cast<Function*>(f);
  if (grid_x == 0 || grid_y == 0 || grid_z != 1 || block_y != 1 || block_z != 1 ||
      block_x == 0 || block_x > 1024 || extra != nullptr || params == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Note: beyond 48 KB a launch needs the function's opt-in, as on the hardware.
  if (smem > 48 * 1024 && static_cast<int>(smem) > function.max_dynamic_smem) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (Graph* graph = capture_of(stream)) {
    auto values = std::make_shared<std::vector<std::vector<unsigned char>>>();
    for (const auto& [offset, size] : parameter_layout(function)) {
      const auto* bytes = static_cast<const unsigned char*>(params[values->size()]);
      values->emplace_back(bytes, bytes + size);
    }
    graph->operations.push_back([=] {
      std::vector<void*> pointers;
      for (auto& value : *values) pointers.push_back(value.data());
      return launch_kernel(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, smem, nullptr,
                           pointers.data(), nullptr, programmatic);
    });
    return CUDA_SUCCESS;
  }
  AttnjitFakeLauncher launcher;
  void* user;
  {
    std::lock_guard lock(state().mutex);
    launcher = state().launcher;
    user = state().launcher_user;
    ++state().launches;
    if (programmatic) ++state().programmatic_launches;
  }
  if (launcher == nullptr && skip_launches()) return CUDA_SUCCESS;
  if (launcher == nullptr) {
    attnjit::LaunchGrid grid;
    grid.grid_x = grid_x;
    grid.grid_y = grid_y;
    grid.threads = block_x;
    grid.smem_bytes = smem;
    return emulate(*reinterpret_cast<Function*>(f), grid, params, programmatic);
  }
  const AttnjitFakeLaunch launch{
      function.name.c_str(), grid_x,           grid_y, block_x, smem, params,
      programmatic ? 1 : 0,  function.carveout};
  return launcher(&launch, user) == 0 ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED;
}

}  // namespace

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                unsigned block_x, unsigned block_y, unsigned block_z, unsigned smem,
                                CUstream stream, void** params, void** extra) {
  return launch_kernel(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, smem, stream, params,
                       extra, false);
}

// Only the attribute attnjit sets is known; programmatic stream serialisation is refused below
// compute capability 9.0 (griddepcontrol needs sm_90), so a host that asks for it there fails
// the tests here instead of depending on what a real driver makes of it.
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                  void** extra) {
  if (config == nullptr || (config->numAttrs > 0 && config->attrs == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  bool programmatic = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& attribute = config->attrs[i];
    if (attribute.id != CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    programmatic = attribute.value.programmaticStreamSerializationAllowed != 0;
  }
  if (programmatic && fake_sm() < 90) return CUDA_ERROR_NOT_SUPPORTED;
  // ATTNJIT_FAKE_CUDA_REFUSE_PDL=1: a driver without programmatic dependent launch.
  if (programmatic && env_int("ATTNJIT_FAKE_CUDA_REFUSE_PDL", 0) != 0) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return launch_kernel(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                       config->blockDimY, config->blockDimZ, config->sharedMemBytes,
                       config->hStream, params, extra, programmatic);
}

// ---- Memory.
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  return allocate(pointer, bytes, false);
}
CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* pointer, size_t bytes, unsigned int) {
  return allocate(pointer, bytes, true);
}
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* pointer, size_t bytes, CUstream stream) {
  const CUresult result = allocate(pointer, bytes, false);
  if (Graph* graph = capture_of(stream); graph != nullptr && result == CUDA_SUCCESS) {
    graph->allocations.push_back(*pointer);
  }
  return result;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr pointer) { return release(pointer); }
// Pinned, device-mapped host memory: on the fake, host and device addresses are the same.
CUresult CUDAAPI cuMemHostAlloc(void** pointer, size_t bytes, unsigned int) {
  CUdeviceptr address = 0;
  const CUresult result = allocate(&address, bytes, false);
  if (result == CUDA_SUCCESS) *pointer = reinterpret_cast<void*>(address);
  return result;
}
CUresult CUDAAPI cuMemFreeHost(void* pointer) {
  return release(reinterpret_cast<CUdeviceptr>(pointer));
}
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* device, void* host, unsigned int flags) {
  std::lock_guard lock(state().mutex);
  if (flags != 0 || state().allocations.count(reinterpret_cast<std::uintptr_t>(host)) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *device = reinterpret_cast<CUdeviceptr>(host);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr pointer, CUstream stream) {
  // Note: a graph's own allocation lives as long as the graph (cuGraphDestroy frees it).
  if (const Graph* graph = capture_of(stream)) {
    const auto& owned = graph->allocations;
    if (std::find(owned.begin(), owned.end(), pointer) != owned.end()) return CUDA_SUCCESS;
  }
  return release(pointer);
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  if (const CUresult refused = forbidden_during_capture(); refused != CUDA_SUCCESS) return refused;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  if (const CUresult refused = forbidden_during_capture(); refused != CUDA_SUCCESS) return refused;
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}
namespace {

// The asynchronous copies and memsets: recorded in a capturing stream (a copy node reads and
// writes the same pointers at each replay), done at once otherwise.
CUresult run_or_record(CUstream stream, std::function<CUresult()> operation) {
  if (Graph* graph = capture_of(stream)) {
    graph->operations.push_back(std::move(operation));
    return CUDA_SUCCESS;
  }
  return operation();
}

}  // namespace

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes,
                                   CUstream stream) {
  return run_or_record(stream, [=] {
    std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return run_or_record(stream, [=] {
    std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuMemsetD32(CUdeviceptr dst, unsigned int value, size_t count) {
  if (const CUresult refused = forbidden_during_capture(); refused != CUDA_SUCCESS) return refused;
  fill_words(dst, value, count);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count,
                                  CUstream stream) {
  return run_or_record(stream, [=] {
    fill_words(dst, value, count);
    return CUDA_SUCCESS;
  });
}

// Device memory for the fake's allocations, "unknown" (all zeros, CUDA_SUCCESS) for any other
// pointer, as the real cuPointerGetAttributes answers for unregistered host memory.
CUresult CUDAAPI cuPointerGetAttributes(unsigned count, CUpointer_attribute* attributes,
                                        void** values, CUdeviceptr pointer) {
  std::lock_guard lock(state().mutex);
  const auto it = find_allocation(static_cast<std::uintptr_t>(pointer));
  const bool known = it != state().allocations.end();
  for (unsigned i = 0; i < count; ++i) {
    switch (attributes[i]) {
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned*>(values[i]) = known ? CU_MEMORYTYPE_DEVICE : 0;
        break;
      case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *static_cast<bool*>(values[i]) = known && it->second.managed;
        break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *static_cast<int*>(values[i]) = known ? 0 : -2;
        break;
      case CU_POINTER_ATTRIBUTE_CONTEXT:
        *static_cast<CUcontext*>(values[i]) = known ? the_context() : nullptr;
        break;
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *static_cast<CUdeviceptr*>(values[i]) = known ? it->first : 0;
        break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *static_cast<std::size_t*>(values[i]) = known ? it->second.bytes : 0;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                       CUdeviceptr pointer) {
  void* values[] = {data};
  return cuPointerGetAttributes(1, &attribute, values, pointer);
}

// ---- Streams and events: everything is synchronous.
CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  *stream = reinterpret_cast<CUstream>(new int(0));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  delete reinterpret_cast<int*>(stream);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream) { return forbidden_during_capture(); }
CUresult CUDAAPI cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  const Graph* graph = capture_of(stream);
  *status = graph == nullptr     ? CU_STREAM_CAPTURE_STATUS_NONE
            : graph->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                 : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

// ---- Graphs (see Graph above). The legacy default stream cannot capture, as on CUDA.
CUresult CUDAAPI cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode) {
  if (stream == nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::lock_guard lock(state().mutex);
  auto& graph = state().captures[stream];
  if (graph) return CUDA_ERROR_ILLEGAL_STATE;
  graph = std::make_unique<Graph>();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphDestroy(CUgraph handle) {
  std::unique_ptr<Graph> graph(reinterpret_cast<Graph*>(handle));
  for (const CUdeviceptr pointer : graph->allocations) release(pointer);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph* out) {
  std::unique_ptr<Graph> graph;
  {
    std::lock_guard lock(state().mutex);
    const auto it = state().captures.find(stream);
    if (it == state().captures.end()) return CUDA_ERROR_ILLEGAL_STATE;
    graph = std::move(it->second);
    state().captures.erase(it);
  }
  if (graph->invalidated) {
    cuGraphDestroy(reinterpret_cast<CUgraph>(graph.release()));
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *out = reinterpret_cast<CUgraph>(graph.release());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long) {
  *exec = reinterpret_cast<CUgraphExec>(new GraphExec{reinterpret_cast<const Graph*>(graph)});
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  if (capture_of(stream) != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  for (const auto& operation : reinterpret_cast<const GraphExec*>(exec)->graph->operations) {
    if (const CUresult result = operation(); result != CUDA_SUCCESS) return result;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) {
  delete reinterpret_cast<GraphExec*>(exec);
  return CUDA_SUCCESS;
}
// Events hold the host time of their record: launches run synchronously, so elapsed times are
// the emulator's (far from a GPU's, but finite and ordered).
using EventTime = std::chrono::steady_clock::time_point;
CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int) {
  *event = reinterpret_cast<CUevent>(new EventTime());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent event, CUstream) {
  *reinterpret_cast<EventTime*>(event) = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent stop) {
  *ms = std::chrono::duration<float, std::milli>(*reinterpret_cast<EventTime*>(stop) -
                                                 *reinterpret_cast<EventTime*>(start))
            .count();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent event) {
  delete reinterpret_cast<EventTime*>(event);
  return CUDA_SUCCESS;
}

// ---- Tensor maps (TMA), encoded by the shared fake encoding that the emulated TMA loads read.
static_assert(attnjit::simt::kFakeDataTypeFloat16 == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 &&
              attnjit::simt::kFakeDataTypeBfloat16 == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 &&
              attnjit::simt::kFakeDataTypeLast == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B &&
              attnjit::simt::kFakeInterleaveLast == CU_TENSOR_MAP_INTERLEAVE_32B &&
              attnjit::simt::kFakeSwizzle128B == CU_TENSOR_MAP_SWIZZLE_128B &&
              attnjit::simt::kFakeSwizzleLast == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B &&
              attnjit::simt::kFakeL2PromotionLast == CU_TENSOR_MAP_L2_PROMOTION_L2_256B &&
              attnjit::simt::kFakeOobFillNan == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
              "the fake encoding's constants are cuda.h's");
CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType data_type,
                                        cuuint32_t rank, void* global_address,
                                        const cuuint64_t* global_dim,
                                        const cuuint64_t* global_strides,
                                        const cuuint32_t* box_dim,
                                        const cuuint32_t* element_strides,
                                        CUtensorMapInterleave interleave,
                                        CUtensorMapSwizzle swizzle,
                                        CUtensorMapL2promotion l2_promotion,
                                        CUtensorMapFloatOOBfill oob_fill) {
  const std::string why = attnjit::simt::encode_fake_tensor_map(
      map, data_type, rank, global_address, global_dim, global_strides, box_dim,
      element_strides, interleave, swizzle, l2_promotion, oob_fill);
  return why.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// ---- Entry points by name, as the backend resolves them.
CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** function, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult* status) {
  static const std::map<std::string, void*> table = {
#define ATTNJIT_FAKE_ENTRY(name) {#name, reinterpret_cast<void*>(&name)}
      ATTNJIT_FAKE_ENTRY(cuInit),
      ATTNJIT_FAKE_ENTRY(cuDriverGetVersion),
      ATTNJIT_FAKE_ENTRY(cuGetErrorName),
      ATTNJIT_FAKE_ENTRY(cuGetErrorString),
      ATTNJIT_FAKE_ENTRY(cuDeviceGet),
      ATTNJIT_FAKE_ENTRY(cuDeviceGetCount),
      ATTNJIT_FAKE_ENTRY(cuDeviceGetAttribute),
      ATTNJIT_FAKE_ENTRY(cuDeviceGetName),
      ATTNJIT_FAKE_ENTRY(cuDevicePrimaryCtxRetain),
      ATTNJIT_FAKE_ENTRY(cuDevicePrimaryCtxRelease),
      ATTNJIT_FAKE_ENTRY(cuCtxGetCurrent),
      ATTNJIT_FAKE_ENTRY(cuCtxSetCurrent),
      ATTNJIT_FAKE_ENTRY(cuCtxGetDevice),
      ATTNJIT_FAKE_ENTRY(cuCtxGetId),
      ATTNJIT_FAKE_ENTRY(cuCtxSynchronize),
      ATTNJIT_FAKE_ENTRY(cuModuleLoadData),
      ATTNJIT_FAKE_ENTRY(cuModuleUnload),
      ATTNJIT_FAKE_ENTRY(cuModuleGetFunction),
      ATTNJIT_FAKE_ENTRY(cuModuleGetGlobal),
      ATTNJIT_FAKE_ENTRY(cuMemHostAlloc),
      ATTNJIT_FAKE_ENTRY(cuMemFreeHost),
      ATTNJIT_FAKE_ENTRY(cuMemHostGetDevicePointer),
      ATTNJIT_FAKE_ENTRY(cuFuncSetAttribute),
      ATTNJIT_FAKE_ENTRY(cuFuncGetAttribute),
      ATTNJIT_FAKE_ENTRY(cuFuncGetParamInfo),
      ATTNJIT_FAKE_ENTRY(cuLaunchKernel),
      ATTNJIT_FAKE_ENTRY(cuLaunchKernelEx),
      ATTNJIT_FAKE_ENTRY(cuOccupancyMaxActiveBlocksPerMultiprocessor),
      ATTNJIT_FAKE_ENTRY(cuPointerGetAttribute),
      ATTNJIT_FAKE_ENTRY(cuPointerGetAttributes),
      ATTNJIT_FAKE_ENTRY(cuMemAlloc),
      ATTNJIT_FAKE_ENTRY(cuMemFree),
      ATTNJIT_FAKE_ENTRY(cuMemAllocManaged),
      ATTNJIT_FAKE_ENTRY(cuMemAllocAsync),
      ATTNJIT_FAKE_ENTRY(cuMemFreeAsync),
      ATTNJIT_FAKE_ENTRY(cuMemcpyHtoD),
      ATTNJIT_FAKE_ENTRY(cuMemcpyDtoH),
      ATTNJIT_FAKE_ENTRY(cuMemcpyHtoDAsync),
      ATTNJIT_FAKE_ENTRY(cuMemcpyDtoHAsync),
      ATTNJIT_FAKE_ENTRY(cuMemsetD32),
      ATTNJIT_FAKE_ENTRY(cuMemsetD32Async),
      ATTNJIT_FAKE_ENTRY(cuStreamCreate),
      ATTNJIT_FAKE_ENTRY(cuStreamDestroy),
      ATTNJIT_FAKE_ENTRY(cuStreamSynchronize),
      ATTNJIT_FAKE_ENTRY(cuStreamIsCapturing),
      ATTNJIT_FAKE_ENTRY(cuStreamBeginCapture),
      ATTNJIT_FAKE_ENTRY(cuStreamEndCapture),
      ATTNJIT_FAKE_ENTRY(cuGraphInstantiateWithFlags),
      ATTNJIT_FAKE_ENTRY(cuGraphLaunch),
      ATTNJIT_FAKE_ENTRY(cuGraphExecDestroy),
      ATTNJIT_FAKE_ENTRY(cuGraphDestroy),
      ATTNJIT_FAKE_ENTRY(cuEventCreate),
      ATTNJIT_FAKE_ENTRY(cuEventRecord),
      ATTNJIT_FAKE_ENTRY(cuEventSynchronize),
      ATTNJIT_FAKE_ENTRY(cuEventElapsedTime),
      ATTNJIT_FAKE_ENTRY(cuEventDestroy),
      ATTNJIT_FAKE_ENTRY(cuTensorMapEncodeTiled),
#undef ATTNJIT_FAKE_ENTRY
  };
  const auto it = table.find(symbol);
  *function = it == table.end() ? nullptr : it->second;
  if (status != nullptr) {
    *status = it == table.end() ? CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
                                : CU_GET_PROC_ADDRESS_SUCCESS;
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
