// A progress bar on stderr: redrawn in place on a terminal, plain periodic lines otherwise (CI
// logs, pipes). Thread-safe: workers call step() as items finish.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace attnjit::cli {

class Progress {
 public:
  Progress(std::string label, std::size_t total, std::FILE* out = stderr)
      : label_(std::move(label)), total_(total), out_(out), tty_(::isatty(::fileno(out)) != 0),
        start_(Clock::now()), last_line_(start_) {}

  // One item finished; `item` names it ("causal bf16 d128 sm_90").
  void step(std::string_view item, bool failed) {
    const std::lock_guard lock(mutex_);
    ++done_;
    failed_ += failed ? 1 : 0;
    const auto now = Clock::now();
    if (tty_) {
      constexpr std::size_t kWidth = 30;
      const std::size_t filled = total_ == 0 ? kWidth : kWidth * done_ / total_;
      fmt::print(out_, "\r\x1b[K{} [{}{}] {}/{}{} {}", label_, std::string(filled, '#'),
                 std::string(kWidth - filled, '.'), done_, total_,
                 failed_ ? fmt::format(" ({} failed)", failed_) : std::string(), item);
      std::fflush(out_);
    } else if (done_ == total_ || now - last_line_ >= std::chrono::seconds(2) ||
               done_ % std::max<std::size_t>(1, total_ / 10) == 0) {
      // Plain lines at most every ~10% or 2 s, so a log stays short.
      last_line_ = now;
      fmt::print(out_, "{}: {}/{} done{}, {:.1f} s\n", label_, done_, total_,
                 failed_ ? fmt::format(" ({} failed)", failed_) : std::string(), seconds());
      std::fflush(out_);
    }
  }

  // Ends the in-place line on a terminal.
  void finish() {
    const std::lock_guard lock(mutex_);
    if (tty_ && done_ > 0) fmt::print(out_, "\n");
  }

  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_;
  std::size_t total_;
  std::FILE* out_;
  bool tty_;
  Clock::time_point start_;
  Clock::time_point last_line_;
  std::mutex mutex_;
  std::size_t done_ = 0;
  std::size_t failed_ = 0;
};

}  // namespace attnjit::cli
