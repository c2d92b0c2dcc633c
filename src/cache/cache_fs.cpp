#include "cache/cache_fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/error.hpp"

namespace attnjit::cache {
namespace fs = std::filesystem;
namespace {

constexpr mode_t kDirMode = 0700;
constexpr mode_t kFileMode = 0600;

std::string errno_text(int error) { return std::strerror(error); }

// After an open with O_NOFOLLOW failed with ELOOP or ENOTDIR: why, in words.
std::string not_followed_reason(int dir_fd, const std::string& name) {
  struct stat info {};
  if (::fstatat(dir_fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(info.st_mode)) {
    return "is a symbolic link (not followed)";
  }
  return "is not a directory";
}

void check_trusted(const Fd& fd, const fs::path& path, Trust trust) {
  if (!trust) return;
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    throw_error(Status::io, "cannot stat {}: {}", path.string(), errno_text(errno));
  }
  if (const std::string problem = trust_problem(info, *trust); !problem.empty()) {
    throw_error(Status::cache, "refusing {}: {}", path.string(), problem);
  }
}

// Mode 0700 whatever the umask (mkdir only ever removes bits from the mode it is given).
void make_private_dir(const fs::path& path) {
  if (::mkdir(path.c_str(), kDirMode) != 0) {
    if (errno == EEXIST) return;
    throw_error(Status::io, "cannot create {}: {}", path.string(), errno_text(errno));
  }
  ::chmod(path.c_str(), kDirMode);  // what mkdir's mode lost to the umask
}

void make_private_dirs(const fs::path& path) {
  struct stat info {};
  if (path.empty() || ::stat(path.c_str(), &info) == 0) return;
  if (path.has_parent_path() && path.parent_path() != path) make_private_dirs(path.parent_path());
  make_private_dir(path);
}

}  // namespace

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

std::string trust_problem(const struct stat& info, uid_t user) {
  if (info.st_uid != user && info.st_uid != 0) {
    return fmt::format("it is owned by user {}, not by user {} or root", info.st_uid, user);
  }
  const unsigned mode = info.st_mode & 07777;
  if ((info.st_mode & S_IWOTH) != 0) return fmt::format("it is writable by all users (mode {:04o})", mode);
  if ((info.st_mode & S_IWGRP) != 0) return fmt::format("it is writable by its group (mode {:04o})", mode);
  return {};
}

std::optional<Dir> open_root(const fs::path& root, bool create, Trust trust) {
  if (create) make_private_dirs(root);
  Fd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    const int error = errno;
    if (error == ENOENT) return std::nullopt;
    struct stat info {};
    if (error == ENOTDIR && ::stat(root.c_str(), &info) == 0) {
      throw_error(Status::io, "cache root {} is not a directory", root.string());
    }
    throw_error(Status::io, "cannot open the cache root {}: {}", root.string(), errno_text(error));
  }
  check_trusted(fd, root, trust);
  return Dir{std::move(fd), root};
}

std::optional<Dir> open_dir(const Dir& parent, const std::string& name, bool create, Trust trust) {
  const fs::path path = parent.path / name;
  const auto open = [&] {
    return Fd(::openat(parent.fd.get(), name.c_str(),
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  };
  Fd fd = open();
  if (!fd && errno == ENOENT) {
    if (!create) return std::nullopt;
    if (::mkdirat(parent.fd.get(), name.c_str(), kDirMode) == 0) {
      // What mkdir's mode lost to the umask (0700 under umask 0777 would be 0000).
      ::fchmodat(parent.fd.get(), name.c_str(), kDirMode, 0);
    } else if (errno != EEXIST) {
      throw_error(Status::io, "cannot create {}: {}", path.string(), errno_text(errno));
    }
    fd = open();
  }
  if (!fd) {
    const int error = errno;
    if (error == ELOOP || error == ENOTDIR) {
      throw_error(Status::cache, "{} {}", path.string(), not_followed_reason(parent.fd.get(), name));
    }
    throw_error(Status::io, "cannot open {}: {}", path.string(), errno_text(error));
  }
  check_trusted(fd, path, trust);
  return Dir{std::move(fd), path};
}

std::optional<OpenFile> open_file(const Dir& dir, const std::string& name, Trust trust) {
  OpenFile file;
  file.path = dir.path / name;
  file.fd = Fd(::openat(dir.fd.get(), name.c_str(),
                        O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!file.fd) {
    const int error = errno;
    if (error == ENOENT) return std::nullopt;
    if (error == ELOOP) {
      throw_error(Status::cache, "{} is a symbolic link (not followed)", file.path.string());
    }
    throw_error(Status::io, "cannot open {}: {}", file.path.string(), errno_text(error));
  }
  if (::fstat(file.fd.get(), &file.info) != 0) {
    throw_error(Status::io, "cannot stat {}: {}", file.path.string(), errno_text(errno));
  }
  if (!S_ISREG(file.info.st_mode)) {
    throw_error(Status::cache, "{} is not a regular file", file.path.string());
  }
  if (const std::string problem = trust ? trust_problem(file.info, *trust) : std::string();
      !problem.empty()) {
    throw_error(Status::cache, "refusing {}: {}", file.path.string(), problem);
  }
  return file;
}

std::string read_all(const OpenFile& file, std::uintmax_t max_bytes) {
  const auto too_large = [&](std::uintmax_t size) {
    throw_error(Status::cache, "{} has {} bytes, more than the {} expected", file.path.string(),
                size, max_bytes);
  };
  const auto size = static_cast<std::uintmax_t>(file.info.st_size);
  if (size > max_bytes) too_large(size);
  // One byte more than the file holds, to see it grow past the limit.
  std::string contents(static_cast<std::size_t>(size) + 1, '\0');
  std::size_t done = 0;
  while (true) {
    if (done == contents.size()) {
      if (done > max_bytes) too_large(done);
      contents.resize(std::min<std::uintmax_t>(max_bytes + 1, contents.size() * 2 + 4096));
    }
    const ssize_t n = ::read(file.fd.get(), contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_error(Status::io, "cannot read {}: {}", file.path.string(), errno_text(errno));
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  if (done > max_bytes) too_large(done);
  contents.resize(done);
  return contents;
}

std::string temp_file_name(std::string_view name, pid_t pid, unsigned counter) {
  return fmt::format(".{}.tmp.{}.{}", name, pid, counter);
}

bool is_temp_file_name(std::string_view file_name) {
  return file_name.starts_with('.') && file_name.find(".tmp.") != std::string_view::npos;
}

std::optional<std::pair<std::string, pid_t>> parse_temp_file_name(std::string_view file_name) {
  const auto marker = file_name.rfind(".tmp.");
  if (!file_name.starts_with('.') || marker == std::string_view::npos || marker < 2) {
    return std::nullopt;
  }
  const std::string_view rest = file_name.substr(marker + 5);
  pid_t pid = 0;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
  unsigned counter = 0;
  if (error != std::errc{} || pid <= 0 || end == rest.data() + rest.size() || *end != '.' ||
      std::from_chars(end + 1, rest.data() + rest.size(), counter).ptr != rest.data() + rest.size()) {
    return std::nullopt;
  }
  return std::pair{std::string(file_name.substr(1, marker - 1)), pid};
}

void write_file_atomic(const Dir& dir, const std::string& name, std::span<const char> bytes) {
  static std::atomic<unsigned> counter{0};
  const std::string temp = temp_file_name(name, ::getpid(), counter.fetch_add(1));
  const fs::path path = dir.path / name;
  const auto fail = [&](std::string_view what) {
    const int error = errno;
    ::unlinkat(dir.fd.get(), temp.c_str(), 0);
    throw_error(Status::io, "cannot {} {}: {}", what, path.string(), errno_text(error));
  };
  {
    Fd fd(::openat(dir.fd.get(), temp.c_str(),
                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kFileMode));
    if (!fd) fail("create a temporary file for");
    if (::fchmod(fd.get(), kFileMode) != 0) fail("set the mode of a temporary file for");
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
  if (::renameat(dir.fd.get(), temp.c_str(), dir.fd.get(), name.c_str()) != 0) {
    fail("rename a temporary file onto");
  }
  // Make the rename itself durable; failing to is not worth failing the store over.
  ::fsync(dir.fd.get());
}

std::vector<DirChild> list_dir(const Dir& dir) {
  std::vector<DirChild> children;
  // Its own open file description: a dup() would share (and move) the offset of dir.fd.
  const int fd = ::openat(dir.fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_error(Status::io, "cannot list {}: {}", dir.path.string(), errno_text(errno));
  DIR* stream = ::fdopendir(fd);
  if (stream == nullptr) {
    const int error = errno;
    ::close(fd);
    throw_error(Status::io, "cannot list {}: {}", dir.path.string(), errno_text(error));
  }
  while (const dirent* entry = ::readdir(stream)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat info {};
    if (::fstatat(dir.fd.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
    DirChild child{name, FileKind::other, 0, static_cast<std::int64_t>(info.st_mtime)};
    if (S_ISDIR(info.st_mode)) {
      child.kind = FileKind::directory;
    } else if (S_ISLNK(info.st_mode)) {
      child.kind = FileKind::symlink;
    } else if (S_ISREG(info.st_mode)) {
      child.kind = FileKind::regular;
      child.size = static_cast<std::uintmax_t>(info.st_size);
    }
    children.push_back(std::move(child));
  }
  ::closedir(stream);
  std::sort(children.begin(), children.end(),
            [](const DirChild& a, const DirChild& b) { return a.name < b.name; });
  return children;
}

bool remove_file(const Dir& dir, const std::string& name) {
  if (::unlinkat(dir.fd.get(), name.c_str(), 0) == 0) return true;
  if (errno == ENOENT) return false;
  throw_error(Status::io, "cannot remove {}: {}", (dir.path / name).string(), errno_text(errno));
}

void remove_dir_if_empty(const Dir& parent, const std::string& name) {
  ::unlinkat(parent.fd.get(), name.c_str(), AT_REMOVEDIR);
}

}  // namespace attnjit::cache
