#include "problem_placement.hpp"

namespace attnjit::cli {
namespace {

std::span<std::byte> bytes_of(void* data, std::size_t bytes) {
  return {static_cast<std::byte*>(data), bytes};
}

}  // namespace

ProblemPlacement::ProblemPlacement(reference::HostProblem& problem, bool on_gpu)
    : problem_(problem), on_gpu_(on_gpu), buffers_(problem.buffers()) {
  if (!on_gpu_) return;
  buffers_.q = upload(buffers_.q, problem_.q.storage_bytes());
  buffers_.k = upload(buffers_.k, problem_.k.storage_bytes());
  buffers_.v = upload(buffers_.v, problem_.v.storage_bytes());
  out_ = cuda::DeviceBuffer(problem_.out.storage_bytes());
  out_.upload(bytes_of(problem_.out.data(), problem_.out.storage_bytes()));
  buffers_.out = out_.get();
  if (!problem_.lse.empty()) {
    const std::size_t lse_bytes = problem_.lse.size() * sizeof(float);
    lse_ = cuda::DeviceBuffer(lse_bytes);
    lse_.upload(bytes_of(problem_.lse.data(), lse_bytes));
    buffers_.lse = static_cast<float*>(lse_.get());
  }
}

void* ProblemPlacement::upload(const void* data, std::size_t bytes) {
  device_.emplace_back(bytes);
  device_.back().upload({static_cast<const std::byte*>(data), bytes});
  return device_.back().get();
}

const void* ProblemPlacement::place(const void* data, std::size_t bytes) {
  return on_gpu_ ? upload(data, bytes) : data;
}

void ProblemPlacement::fetch_results() {
  if (!on_gpu_) return;
  cuda::synchronize_context();
  out_.download(bytes_of(problem_.out.data(), problem_.out.storage_bytes()));
  if (!problem_.lse.empty()) {
    lse_.download(bytes_of(problem_.lse.data(), problem_.lse.size() * sizeof(float)));
  }
}

}  // namespace attnjit::cli
