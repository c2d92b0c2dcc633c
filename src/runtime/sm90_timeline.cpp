#include "runtime/sm90_timeline.hpp"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/log.hpp"
#include "driver/cuda_driver.hpp"

namespace attnjit::cuda {
namespace {

constexpr const char* kStampNames[kSm90TimelineStamps] = {
    "block_start",   "setup_done", "first_k_issued", "last_v_issued",     "q_ready",
    "first_k_ready", "loop_done",  "output_done",    "last_consumer_done"};

// Once a process: a timeline kernel without a place for its records is worth one warning, not one
// per call.
void warn_once(std::atomic<bool>& warned, const std::string& message) {
  if (!warned.exchange(true)) log().warn("{}", message);
}

// Through a temporary beside `path`, so a reader never sees half a file. A file that cannot be
// written costs a warning: the call it describes has succeeded.
void write_text(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  std::error_code error;
  if (file) std::filesystem::rename(temporary, path, error);
  if (!file || error) {
    // Its own error code: the warning names why the rename failed, not whether the clean-up did.
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    log().warn("timeline: could not write {} ({}); the call's results are not affected", path,
               file ? error.message() : std::string("cannot write ") + temporary);
  }
}

nlohmann::json record_json(long long block, const Sm90TimelineRecord& r) {
  return {{"block", block},     {"written", r.written},   {"smid", r.smid},
          {"q_tile", r.q_tile}, {"batch", r.batch},       {"head", r.head},
          {"tiles", r.tiles},   {"start_ns", r.start_ns}, {"end_ns", r.end_ns},
          {"clock", r.clock}};
}

}  // namespace

Sm90Timeline::Sm90Timeline(const LaunchGrid& grid, CUstream stream) : grid_(grid), stream_(stream) {
  static std::atomic<bool> no_path{false}, captured{false};
  const char* path = std::getenv("ATTNJIT_TIMELINE");
  if (path == nullptr || *path == '\0') {
    warn_once(no_path,
              "an sm90 kernel with the timeline (ATTNJIT_TUNE sm90_timeline=1) runs, but "
              "ATTNJIT_TIMELINE names no file for its records: none are kept");
    return;
  }
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  ATTNJIT_CU(cuStreamIsCapturing, stream, &capture);
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    warn_once(captured,
              "an sm90 kernel with the timeline is being captured into a CUDA graph: its records "
              "need the stream finished after each call, so a captured call keeps none");
    return;
  }
  path_ = path;
  const std::size_t bytes =
      sizeof(Sm90TimelineRecord) * static_cast<std::size_t>(grid.grid_x) * grid.grid_y;
  buffer_.emplace(bytes);
  const std::vector<std::byte> zeros(bytes);
  buffer_->upload(zeros);
}

Sm90TimelineRecord* Sm90Timeline::records() const {
  return buffer_ ? static_cast<Sm90TimelineRecord*>(buffer_->get()) : nullptr;
}

void Sm90Timeline::write(const std::string& kernel) const {
  if (!buffer_) return;
  ATTNJIT_CU(cuStreamSynchronize, stream_);
  const long long blocks = static_cast<long long>(grid_.grid_x) * grid_.grid_y;
  std::vector<Sm90TimelineRecord> records(static_cast<std::size_t>(blocks));
  buffer_->download(std::as_writable_bytes(std::span(records)));

  nlohmann::json timeline{
      {"kernel", kernel},         {"grid", {grid_.grid_x, grid_.grid_y}},
      {"threads", grid_.threads}, {"clock", "SM cycles (%clock64; comparable within one SM)"},
      {"stamps", kStampNames},    {"records", nlohmann::json::array()}};
  for (long long block = 0; block < blocks; ++block) {
    timeline["records"].push_back(record_json(block, records[static_cast<std::size_t>(block)]));
  }
  write_text(path_, timeline.dump() + "\n");
}

}  // namespace attnjit::cuda
