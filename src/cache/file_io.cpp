#include "cache/file_io.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.hpp"

namespace attnjit::cache {
namespace fs = std::filesystem;
namespace {

std::string errno_text(int error) { return std::strerror(error); }

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace

std::optional<std::string> read_file(const fs::path& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    throw_error(Status::io, "cannot open {}: {}", path.string(), errno_text(errno));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    throw_error(Status::io, "cannot stat {}: {}", path.string(), errno_text(errno));
  }
  std::string contents(static_cast<std::size_t>(info.st_size), '\0');
  std::size_t done = 0;
  while (true) {
    if (done == contents.size()) contents.resize(contents.size() + 4096);  // file grew
    const ssize_t n = ::read(fd.get(), contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_error(Status::io, "cannot read {}: {}", path.string(), errno_text(errno));
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  contents.resize(done);
  return contents;
}

bool is_temp_file_name(const std::string& file_name) {
  return file_name.starts_with('.') && file_name.find(".tmp.") != std::string::npos;
}

void write_file_atomic(const fs::path& path, std::span<const char> bytes) {
  static std::atomic<unsigned> counter{0};
  const fs::path dir = path.parent_path();
  const fs::path temp = dir / fmt::format(".{}.tmp.{}.{}", path.filename().string(), ::getpid(),
                                          counter.fetch_add(1));
  const auto fail = [&](std::string_view what) {
    const int error = errno;
    ::unlink(temp.c_str());
    throw_error(Status::io, "cannot {} {}: {}", what, path.string(), errno_text(error));
  };
  {
    Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (fd.get() < 0) fail("create a temporary file for");
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("write");
      }
      done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0) fail("fsync");
    if (::close(fd.release()) != 0) fail("close");
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) fail("rename a temporary file onto");
  // Make the rename itself durable; failing to is not worth failing the store over.
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
}

std::optional<FileLock> FileLock::acquire(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return std::nullopt;
  int result;
  do {
    result = ::flock(fd, LOCK_EX);
  } while (result != 0 && errno == EINTR);
  if (result != 0) {
    ::close(fd);
    return std::nullopt;
  }
  return FileLock(fd);
}

FileLock::~FileLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

}  // namespace attnjit::cache
