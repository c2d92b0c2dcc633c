// The fake libcuda's streams, events and graphs (fake_cuda.cpp says what the fake is): every
// operation is synchronous, and a capturing stream records instead (fake_state.hpp, Graph).
#include <cuda.h>

#include <chrono>
#include <memory>
#include <mutex>

#include "fake_state.hpp"

using namespace attnjit::fake_cuda;

extern "C" {

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

}  // extern "C"
