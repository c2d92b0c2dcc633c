// CUDA graph capture for tests: a stream's work recorded into a graph, then replayed. Through the
// process's driver (driver::api()'s library: the real libcuda, or the fake of tests/fake_driver,
// which records and replays the same way), resolved here with cuGetProcAddress: the library's
// own driver table holds only what attnjit itself calls.
#pragma once

#include <cuda.h>

namespace attnjit::gpu_test {

class GraphCapture {
 public:
  // Begins capturing `stream` (global mode; not the legacy default stream). Throws on failure.
  explicit GraphCapture(CUstream stream);
  ~GraphCapture();
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

  // Ends the capture and instantiates the graph. Throws with the driver's error (a call made
  // during the capture that CUDA forbids invalidates it).
  void end();
  // Queues one replay on the stream.
  void launch();

 private:
  CUstream stream_;
  bool capturing_ = false;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace attnjit::gpu_test
