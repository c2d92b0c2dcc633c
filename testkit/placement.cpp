#include "testkit/placement.hpp"

namespace attnjit::testkit {

ProblemPlacement::ProblemPlacement(HostProblem& problem, bool on_gpu)
    : problem_(problem), on_gpu_(on_gpu), args_(problem.forward_args()) {
  if (!on_gpu_) return;
  args_.q = upload(problem_.q.data(), problem_.q.storage_bytes());
  args_.k = upload(problem_.k.data(), problem_.k.storage_bytes());
  args_.v = upload(problem_.v.data(), problem_.v.storage_bytes());
  out_ = DeviceBuffer(problem_.out.storage_bytes());
  out_.upload(problem_.out.data(), problem_.out.storage_bytes());
  args_.out = out_.get();
  if (!problem_.lse.empty()) {
    const std::size_t lse_bytes = problem_.lse.size() * sizeof(float);
    lse_ = DeviceBuffer(lse_bytes);
    lse_.upload(problem_.lse.data(), lse_bytes);
    args_.lse = static_cast<float*>(lse_.get());
  }
}

void* ProblemPlacement::upload(const void* data, std::size_t bytes) {
  device_.emplace_back(bytes);
  device_.back().upload(data, bytes);
  return device_.back().get();
}

const void* ProblemPlacement::place(const void* data, std::size_t bytes) {
  return on_gpu_ ? upload(data, bytes) : data;
}

void ProblemPlacement::fetch_results() {
  if (!on_gpu_) return;
  synchronize_device();
  out_.download(problem_.out.data(), problem_.out.storage_bytes());
  if (!problem_.lse.empty())
    lse_.download(problem_.lse.data(), problem_.lse.size() * sizeof(float));
}

}  // namespace attnjit::testkit
