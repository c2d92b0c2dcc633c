#include "runtime/sm90_timeline.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

std::string record_json(long long block, const Sm90TimelineRecord& r) {
  std::string clock;
  for (int i = 0; i < kSm90TimelineStamps; ++i) {
    clock += fmt::format("{}{}", i == 0 ? "" : ", ", r.clock[i]);
  }
  return fmt::format(
      "{{\"block\": {}, \"written\": {}, \"smid\": {}, \"q_tile\": {}, \"batch\": {}, "
      "\"head\": {}, \"tiles\": {}, \"start_ns\": {}, \"end_ns\": {}, \"clock\": [{}]}}",
      block, r.written, r.smid, r.q_tile, r.batch, r.head, r.tiles, r.start_ns, r.end_ns, clock);
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

  std::string stamps;
  for (int i = 0; i < kSm90TimelineStamps; ++i) {
    stamps += fmt::format("{}\"{}\"", i == 0 ? "" : ", ", kStampNames[i]);
  }
  std::string text = fmt::format(
      "{{\"kernel\": \"{}\", \"grid\": [{}, {}], \"threads\": {},\n \"clock\": \"SM cycles "
      "(%clock64; comparable within one SM)\",\n \"stamps\": [{}],\n \"records\": [\n",
      kernel, grid_.grid_x, grid_.grid_y, grid_.threads, stamps);
  for (long long block = 0; block < blocks; ++block) {
    text += "  " + record_json(block, records[static_cast<std::size_t>(block)]);
    text += block + 1 < blocks ? ",\n" : "\n";
  }
  text += "]}\n";

  const std::string temporary = path_ + ".tmp";
  std::FILE* file = std::fopen(temporary.c_str(), "w");
  const bool written =
      file != nullptr && std::fwrite(text.data(), 1, text.size(), file) == text.size();
  const bool closed = file != nullptr && std::fclose(file) == 0;
  std::error_code error;
  if (written && closed) std::filesystem::rename(temporary, path_, error);
  if (!written || !closed || error) {
    log().warn("timeline: could not write {} ({}); the call's results are not affected", path_,
               error ? error.message() : "write failed");
  }
}

}  // namespace attnjit::cuda
