// The per-key lock that makes concurrent processes compile a kernel once: an exclusive flock on
// a lock file, waited for with a time limit so that a stopped or stuck holder delays the others
// by that limit at most, never forever.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "cache/cache_fs.hpp"

namespace attnjit::cache {

// How long to wait for another process's lock: ATTNJIT_CACHE_LOCK_TIMEOUT in seconds (0 means
// do not wait; fractions allowed), else 60 s. An unusable value is warned about once and
// replaced by the default.
std::chrono::milliseconds lock_timeout_from_env();
constexpr std::chrono::seconds kDefaultLockTimeout{60};

// An exclusive flock held until destruction (or until the process dies: the kernel releases it
// then, so a crashed compiler never blocks the others).
class FileLock {
 public:
  explicit FileLock(Fd locked) : fd_(std::move(locked)) {}
  FileLock(FileLock&& other) noexcept = default;
  FileLock& operator=(FileLock&&) noexcept = default;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  Fd fd_;
};

enum class LockOutcome {
  held,         // this process holds the lock
  timed_out,    // another process held it for the whole timeout
  unavailable,  // no lock can be had here (read-only directory, a symlink or FIFO planted)
};

struct LockAttempt {
  std::optional<FileLock> lock;  // set when held
  LockOutcome outcome = LockOutcome::unavailable;
  std::string problem;  // why not held
};

// Opens (creating, mode 0600) the lock file `name` in `dir`, never through a symlink, and waits
// for the lock at most `timeout`: at info level when the wait starts, at warn level every 15 s
// after the first 5. Never throws.
LockAttempt acquire_lock(const Dir& dir, const std::string& name, std::chrono::milliseconds timeout,
                         uid_t user);

}  // namespace attnjit::cache
