// Where a CLI command's host problem runs: in place on the CPU backend, or mirrored into device
// memory on the CUDA backend, with the output and log-sum-exp copied back afterwards.
#pragma once

#include <cstddef>
#include <vector>

#include "common/attention_problem.hpp"
#include "reference/random_inputs.hpp"
#include "runtime/cuda_memory.hpp"

namespace attnjit::cli {

class ProblemPlacement {
 public:
  // On the GPU, uploads q, k, v and the (poisoned) out and lse at once.
  ProblemPlacement(reference::HostProblem& problem, bool on_gpu);

  // The problem's buffers as the backend sees them: host or device pointers.
  const AttentionBuffers& buffers() const { return buffers_; }
  // A per-call tensor as the backend sees it (uploaded on the GPU).
  const void* place(const void* data, std::size_t bytes);
  // On the GPU: waits for the work and copies out and lse back into the host problem.
  void fetch_results();

 private:
  void* upload(const void* data, std::size_t bytes);

  reference::HostProblem& problem_;
  bool on_gpu_;
  AttentionBuffers buffers_;
  std::vector<cuda::DeviceBuffer> device_;  // inputs and tensors
  cuda::DeviceBuffer out_, lse_;
};

}  // namespace attnjit::cli
