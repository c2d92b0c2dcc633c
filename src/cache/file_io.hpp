// The few POSIX file operations the cache needs: whole-file read, atomic write (temporary file
// in the same directory, fsync, rename), and an advisory per-key lock.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace attnjit::cache {

// The whole file, or nullopt when it (or a parent directory) does not exist. Throws Error(io) on any other failure.
std::optional<std::string> read_file(const std::filesystem::path& path);

// Writes `bytes` to `path` so that a reader sees either the old file or the whole new one: a
// temporary file in the same directory (see is_temp_file_name), fsync, rename, fsync of the
// directory. Throws Error(io) naming the path and the reason; the temporary file is removed.
void write_file_atomic(const std::filesystem::path& path, std::span<const char> bytes);

// ".<name>.tmp.<pid>.<n>": never mistaken for an entry, removed by `cache clear`.
bool is_temp_file_name(const std::string& file_name);

// An exclusive flock on a lock file, released by the destructor (and by the kernel when the
// process dies, so a crashed compiler never blocks the others).
class FileLock {
 public:
  // Blocks until the lock is held. Returns nullopt (never throws) when the lock file cannot be
  // opened or locked, e.g. on a read-only directory: callers then go on without the lock.
  static std::optional<FileLock> acquire(const std::filesystem::path& path);

  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace attnjit::cache
