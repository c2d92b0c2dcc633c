#include "graph_capture.hpp"

#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "driver/cuda_driver.hpp"

namespace attnjit::gpu_test {
namespace {

struct GraphFunctions {
  PFN_cuStreamBeginCapture_v10010 begin = nullptr;
  PFN_cuStreamEndCapture_v10000 end = nullptr;
  PFN_cuGraphInstantiateWithFlags_v11040 instantiate = nullptr;
  PFN_cuGraphLaunch_v10000 launch = nullptr;
  PFN_cuGraphExecDestroy_v10000 destroy_exec = nullptr;
  PFN_cuGraphDestroy_v10000 destroy = nullptr;
};

template <typename Function>
void resolve(PFN_cuGetProcAddress_v12000 get, const char* name, int version, Function& out) {
  void* function = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (get(name, &function, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) != CUDA_SUCCESS ||
      found != CU_GET_PROC_ADDRESS_SUCCESS || function == nullptr) {
    throw std::runtime_error(std::string("the CUDA driver does not export ") + name);
  }
  out = reinterpret_cast<Function>(function);
}

const GraphFunctions& functions() {
  static const GraphFunctions table = [] {
    // Note: the library is already loaded (driver::api() opened it), so this finds that handle.
    void* library = dlopen(driver::api().library_path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    const auto get = library == nullptr ? nullptr
                                        : reinterpret_cast<PFN_cuGetProcAddress_v12000>(
                                              dlsym(library, "cuGetProcAddress_v2"));
    if (get == nullptr) throw std::runtime_error("the CUDA driver has no cuGetProcAddress_v2");
    GraphFunctions f;
    resolve(get, "cuStreamBeginCapture", 10010, f.begin);
    resolve(get, "cuStreamEndCapture", 10000, f.end);
    resolve(get, "cuGraphInstantiateWithFlags", 11040, f.instantiate);
    resolve(get, "cuGraphLaunch", 10000, f.launch);
    resolve(get, "cuGraphExecDestroy", 10000, f.destroy_exec);
    resolve(get, "cuGraphDestroy", 10000, f.destroy);
    return f;
  }();
  return table;
}

void check(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) driver::throw_result(result, call);
}

}  // namespace

GraphCapture::GraphCapture(CUstream stream) : stream_(stream) {
  check(functions().begin(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
  capturing_ = true;
}

GraphCapture::~GraphCapture() {
  const GraphFunctions& f = functions();
  if (capturing_) {
    CUgraph abandoned = nullptr;
    if (f.end(stream_, &abandoned) == CUDA_SUCCESS && abandoned != nullptr) f.destroy(abandoned);
  }
  if (exec_ != nullptr) f.destroy_exec(exec_);
  if (graph_ != nullptr) f.destroy(graph_);
}

void GraphCapture::end() {
  capturing_ = false;
  check(functions().end(stream_, &graph_), "cuStreamEndCapture");
  check(functions().instantiate(&exec_, graph_, 0), "cuGraphInstantiateWithFlags");
}

void GraphCapture::launch() { check(functions().launch(exec_, stream_), "cuGraphLaunch"); }

}  // namespace attnjit::gpu_test
