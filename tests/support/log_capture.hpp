// Capture of the library's log messages in a test, so it can check that a warning was given (or
// not), not only that the call went on.
#pragma once

#include <spdlog/sinks/ringbuffer_sink.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/log.hpp"

namespace attnjit::test {

// Captures the library's log messages at `level` and above while alive.
class LogCapture {
 public:
  explicit LogCapture(spdlog::level::level_enum level = spdlog::level::warn)
      : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)) {
    sink_->set_pattern("%v");
    log().sinks().push_back(sink_);
    previous_ = log().level();
    log().set_level(level);
  }
  ~LogCapture() {
    auto& sinks = log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    log().set_level(previous_);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::vector<std::string> messages() const { return sink_->last_formatted(); }
  std::size_t count(const std::string& needle) const {
    std::size_t n = 0;
    for (const auto& message : messages()) n += message.find(needle) != std::string::npos;
    return n;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  spdlog::level::level_enum previous_;
};

}  // namespace attnjit::test
