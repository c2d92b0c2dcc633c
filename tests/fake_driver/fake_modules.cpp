// The fake libcuda's modules, functions and launches (fake_cuda.cpp says what the fake is).
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "attnjit/fwd_params.cuh"
#include "attnjit/sm90_fwd_params.cuh"
#include "attnjit/sm90_watchdog_record.cuh"
#include "fake_kernel_source.hpp"
#include "fake_state.hpp"
#include "support/hopper_probe_kernels.hpp"

using namespace attnjit::fake_cuda;

extern "C" {

// ---- Modules and functions.
CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  // Loading a module while a stream captures is modelled as forbidden (CUDA's lazy loading
  // during a capture failed the same way): a capture must find its kernels loaded.
  if (const CUresult refused = forbidden_during_capture(); refused != CUDA_SUCCESS) return refused;
  // Note: the backend must hand over a cubin (an ELF image) or NUL-terminated PTX.
  const auto* bytes = static_cast<const char*>(image);
  if (image == nullptr || (std::memcmp(bytes,
                                       "\x7f"
                                       "ELF",
                                       4) != 0 &&
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
    ++state().module_loads;
    return CUDA_SUCCESS;
  }
  try {
    loaded->source = find_source(static_cast<const unsigned char*>(image));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fake CUDA driver: cannot regenerate the kernel source: %s\n",
                 error.what());
  }
  *module = reinterpret_cast<CUmodule>(loaded.release());
  ++state().module_loads;
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
  // Note: the split-KV merge is in sm80-family modules and the sm90 split kernels' ones, as
  // codegen writes them.
  const Module& found = *reinterpret_cast<Module*>(module);
  const bool combine = std::strcmp(name, "attnjit_split_combine") == 0 &&
                       (found.source.find("attnjit::Sm90FwdParams") == std::string::npos ||
                        found.source.find("attnjit_split_combine(") != std::string::npos);
  // Note: the decoding entry where codegen wrote one (sm80 modules with the decoding features),
  // or in any module whose source is unknown (a test's own launcher runs it).
  const bool decode =
      std::strcmp(name, "attnjit_fwd_decode") == 0 &&
      (found.source.empty() || found.source.find("attnjit_fwd_decode(") != std::string::npos);
  if (std::strcmp(name, "attnjit_fwd") != 0 && std::strcmp(name, "attnjit_tensor_summary") != 0 &&
      !combine && !decode && !found.probes) {
    return CUDA_ERROR_NOT_FOUND;
  }
  auto& functions = reinterpret_cast<Module*>(module)->functions;
  functions.push_back(
      std::make_unique<Function>(Function{name, reinterpret_cast<Module*>(module)}));
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
  if (grid_x == 0 || grid_y == 0 || grid_z != 1 || block_y != 1 || block_z != 1 || block_x == 0 ||
      block_x > 1024 || extra != nullptr || params == nullptr) {
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

}  // extern "C"
