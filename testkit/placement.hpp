// Where a tool's host problem runs: in place on the CPU backend, or mirrored into device memory
// on the CUDA backend, with the output and log-sum-exp copied back afterwards. Part of the test
// kit (testkit/CMakeLists.txt).
#pragma once

#include <cstddef>
#include <vector>

#include "attnjit/attnjit.h"
#include "testkit/device_memory.hpp"
#include "testkit/host_problem.hpp"

namespace attnjit::testkit {

class ProblemPlacement {
 public:
  // On the GPU, uploads q, k, v and the (poisoned) out and lse at once.
  ProblemPlacement(HostProblem& problem, bool on_gpu);

  // The problem's call as the backend sees it: host or device pointers; no params or tensors.
  const attnjit_forward_args& args() const { return args_; }
  // A per-call tensor as the backend sees it (uploaded on the GPU).
  const void* place(const void* data, std::size_t bytes);
  // On the GPU: waits for the work and copies out and lse back into the host problem.
  void fetch_results();

 private:
  void* upload(const void* data, std::size_t bytes);

  HostProblem& problem_;
  bool on_gpu_;
  attnjit_forward_args args_;
  std::vector<DeviceBuffer> device_;  // inputs and tensors
  DeviceBuffer out_, lse_;
};

}  // namespace attnjit::testkit
