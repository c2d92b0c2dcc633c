// The host side of the sm90 kernel's timeline (ATTNJIT_TUNE=sm90_timeline=1; the records and
// the stamps: kernels_templates/attnjit/sm90_timeline.cuh): device records for one launch, copied
// back after it and written to the file $ATTNJIT_TIMELINE names, as JSON that
// tools/bench/timeline_report.py reads. A measuring aid: each call with such a kernel waits for
// its stream, so calls no longer overlap one another (a block's phases are what it measures).
#pragma once

#include <cuda.h>

#include <optional>
#include <string>

#include "attnjit/sm90_timeline.cuh"
#include "runtime/cuda_memory.hpp"
#include "runtime/forward_plan.hpp"

namespace attnjit::cuda {

class Sm90Timeline {
 public:
  // Records for `grid`'s blocks, zeroed. Without $ATTNJIT_TIMELINE, or on a stream that is being
  // captured into a graph (the copy back needs the stream finished), it warns once a process and
  // records nothing: records() is null, which the kernel takes for "no stamps".
  Sm90Timeline(const LaunchGrid& grid, CUstream stream);

  Sm90TimelineRecord* records() const;

  // After the launch: waits for the stream, copies the records back and writes the file (a
  // temporary beside it, then renamed). `kernel` describes the launch for the reader. A file that
  // cannot be written costs a warning: the call's results are not affected.
  void write(const std::string& kernel) const;

 private:
  LaunchGrid grid_;
  CUstream stream_ = nullptr;
  std::string path_;
  std::optional<DeviceBuffer> buffer_;
};

}  // namespace attnjit::cuda
