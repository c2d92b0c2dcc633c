// The fake device's state, shared by its entry points (fake_cuda.cpp and the files beside it):
// allocations, modules and functions, stream captures, the test's launcher, and the device it
// pretends to be.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fake_cuda.h"
#include "simt_module.hpp"

namespace attnjit::fake_cuda {

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
  std::string source;   // the generated kernel source, when found in the cache
  bool probes = false;  // the Hopper probes: any entry name, each taking FwdParams
  std::unique_ptr<attnjit::simt::SimtModule> emulated;  // built at the first launch
  bool has_watchdog_global = false;            // the image names ATTNJIT_SM90_WATCHDOG_SYMBOL
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
  std::atomic<int> module_loads{0};  // cuModuleLoadData calls that succeeded
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
State& state();

int env_int(const char* name, int fallback);
// ATTNJIT_FAKE_CUDA_SM (default 90).
int fake_sm();
// ATTNJIT_FAKE_CUDA_LAUNCHES=skip: launches are checked and counted, and none runs.
bool skip_launches();
// Opt-in shared memory per block of an sm.
int smem_optin(int sm);
// Shared memory an SM has for blocks at the largest carveout: the opt-in limit plus the 1 KB the
// driver reserves per block.
int smem_per_sm(int sm);
CUcontext the_context();

// The allocation containing [address, address + 1), or end(). The caller holds state().mutex.
std::map<std::uintptr_t, Allocation>::iterator find_allocation(std::uintptr_t address);
CUresult allocate(CUdeviceptr* out, std::size_t bytes, bool managed);
CUresult release(CUdeviceptr pointer);
// Every live allocation, as the emulator's device memory.
std::vector<SimtRegion> device_regions();

// The capture `stream` records into, or null when it is not capturing.
Graph* capture_of(CUstream stream);
// A call that CUDA forbids while any stream captures (global mode): CUDA_SUCCESS when none does;
// otherwise every capture is invalidated and the call fails.
CUresult forbidden_during_capture();
// The asynchronous copies and memsets: recorded in a capturing stream (a copy node reads and
// writes the same pointers at each replay), done at once otherwise.
CUresult run_or_record(CUstream stream, std::function<CUresult()> operation);

void fill_words(CUdeviceptr dst, unsigned value, std::size_t count);

}  // namespace attnjit::fake_cuda
