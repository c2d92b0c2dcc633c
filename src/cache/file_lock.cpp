#include "cache/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/log.hpp"

namespace attnjit::cache {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

}  // namespace

std::chrono::milliseconds lock_timeout_from_env() {
  const char* text = std::getenv("ATTNJIT_CACHE_LOCK_TIMEOUT");
  if (text == nullptr || *text == '\0') return kDefaultLockTimeout;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text, &end);
  // A day at most: longer is surely a mistake, and keeps the conversion below in range.
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(value) || value < 0 ||
      value > 86400) {
    static std::once_flag warned;
    std::call_once(warned, [text] {
      log().warn("ATTNJIT_CACHE_LOCK_TIMEOUT='{}' is not a number of seconds in 0..86400; using "
                 "{} s",
                 text, kDefaultLockTimeout.count());
    });
    return kDefaultLockTimeout;
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(value * 1000)));
}

LockAttempt acquire_lock(const Dir& dir, const std::string& name, std::chrono::milliseconds timeout,
                         uid_t user) {
  const std::string path = (dir.path / name).string();
  LockAttempt attempt;
  Fd fd(::openat(dir.fd.get(), name.c_str(),
                 O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0600));
  if (!fd) {
    attempt.problem = errno == ELOOP
                          ? fmt::format("{} is a symbolic link (not followed)", path)
                          : fmt::format("cannot open {}: {}", path, std::strerror(errno));
    return attempt;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    attempt.problem = fmt::format("{} is not a regular file", path);
    return attempt;
  }
  if (const std::string problem = trust_problem(info, user); !problem.empty()) {
    attempt.problem = fmt::format("refusing {}: {}", path, problem);
    return attempt;
  }
  if (info.st_uid == ::geteuid()) ::fchmod(fd.get(), 0600);  // whatever the umask was

  const auto start = Clock::now();
  const auto deadline = start + timeout;
  auto next_warning = start + std::chrono::seconds(5);
  auto pause = std::chrono::milliseconds(5);
  bool announced = false;
  while (true) {
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      attempt.outcome = LockOutcome::held;
      attempt.lock.emplace(FileLock(std::move(fd)));
      return attempt;
    }
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      attempt.problem = fmt::format("cannot lock {}: {}", path, std::strerror(errno));
      return attempt;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      attempt.outcome = LockOutcome::timed_out;
      attempt.problem = fmt::format("another process held {} for {:.0f} s", path,
                                    seconds(now - start));
      return attempt;
    }
    if (!announced) {
      log().info("kernel cache: waiting for {}, held by another process (at most {:.0f} s; "
                 "ATTNJIT_CACHE_LOCK_TIMEOUT)",
                 path, seconds(timeout));
      announced = true;
    }
    if (now >= next_warning) {
      log().warn("kernel cache: still waiting for {} after {:.0f} s (giving up after {:.0f} s; "
                 "ATTNJIT_CACHE_LOCK_TIMEOUT)",
                 path, seconds(now - start), seconds(timeout));
      next_warning += std::chrono::seconds(15);
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
}

FileLock::~FileLock() {
  if (fd_) ::flock(fd_.get(), LOCK_UN);
}

}  // namespace attnjit::cache
