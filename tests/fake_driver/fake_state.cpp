#include "fake_state.hpp"

#include <cstdlib>
#include <string_view>

namespace attnjit::fake_cuda {

State& state() {
  static State* instance = new State;
  return *instance;
}

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

int smem_per_sm(int sm) { return smem_optin(sm) + 1024; }

CUcontext the_context() { return reinterpret_cast<CUcontext>(&state().context_tag); }

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

Graph* capture_of(CUstream stream) {
  std::lock_guard lock(state().mutex);
  const auto it = state().captures.find(stream);
  return it == state().captures.end() ? nullptr : it->second.get();
}

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

std::vector<SimtRegion> device_regions() {
  std::lock_guard lock(state().mutex);
  std::vector<SimtRegion> regions;
  for (const auto& [address, allocation] : state().allocations) {
    regions.push_back({reinterpret_cast<const void*>(address), allocation.bytes, 1});
  }
  return regions;
}

CUresult run_or_record(CUstream stream, std::function<CUresult()> operation) {
  if (Graph* graph = capture_of(stream)) {
    graph->operations.push_back(std::move(operation));
    return CUDA_SUCCESS;
  }
  return operation();
}

}  // namespace attnjit::fake_cuda
