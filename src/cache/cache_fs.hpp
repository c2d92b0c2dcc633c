// The file operations of the cache, all relative to directories already open: nothing inside the
// cache root is reached through a path that a symlink could redirect. Directories are opened
// with openat(O_DIRECTORY | O_NOFOLLOW), files with O_NOFOLLOW | O_CLOEXEC (and O_NONBLOCK, so a
// FIFO planted where a file belongs cannot block the open); only regular files are read, never
// more than a given size. What this process creates is 0700 (directories) or 0600 (files)
// whatever the umask.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnjit::cache {

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

// Why a file or directory of the cache must not be trusted, or "" when it may be: it must be
// owned by `user` or by root, and writable by nobody else (no group or other write bit).
// Note: a pure function of the stat fields, so tests running as root can still check the rule
// for other owners.
std::string trust_problem(const struct stat& info, uid_t user);

// Whose files to trust: trust_problem against this user, or nullopt to check nothing (listing
// and clearing, which only read names and remove files, and must work on a refused cache).
using Trust = std::optional<uid_t>;

// An open directory of the cache, with its path for messages.
struct Dir {
  Fd fd;
  std::filesystem::path path;
};

// The cache root. Symlinks in `root` itself are followed (whoever chose the path chose them);
// nothing below it is. With `create`, a missing root and its missing parents are created 0700.
// nullopt when it does not exist and `create` is false. Throws Error(io) when it is not a
// directory or cannot be opened, Error(cache) when it is not trusted (trust_problem).
std::optional<Dir> open_root(const std::filesystem::path& root, bool create, Trust trust);

// The directory `name` inside `parent`, never through a symlink; with `create`, made 0700 when
// missing. nullopt when missing and `create` is false. Throws Error(cache) when `name` is a
// symlink, not a directory or not trusted, Error(io) on other failures.
std::optional<Dir> open_dir(const Dir& parent, const std::string& name, bool create, Trust trust);

// A regular file inside an open directory.
struct OpenFile {
  Fd fd;
  std::filesystem::path path;
  struct stat info {};
};

// Opens `name` in `dir` for reading: nullopt when missing. Throws Error(cache) when it is a
// symlink, not a regular file or not trusted, Error(io) on other failures.
std::optional<OpenFile> open_file(const Dir& dir, const std::string& name, Trust trust);

// Reads the whole of an opened file, refusing (Error(cache)) one larger than `max_bytes` before
// reading it, or one that grows past it while being read.
std::string read_all(const OpenFile& file, std::uintmax_t max_bytes);

// Writes `bytes` as `name` in `dir` so that a reader sees the old file or the whole new one: a
// temporary file (temp_file_name), mode 0600, fsync, renameat onto `name` (which replaces a
// symlink or a FIFO there, never writes through it), fsync of the directory. Throws Error(io)
// naming the path and the reason; the temporary file is removed.
void write_file_atomic(const Dir& dir, const std::string& name, std::span<const char> bytes);

// ".<name>.tmp.<pid>.<n>": never mistaken for an entry, removed by `cache clear` and by the next
// writer of `name` once its writer is dead.
std::string temp_file_name(std::string_view name, pid_t pid, unsigned counter);
bool is_temp_file_name(std::string_view file_name);
// The file a temporary will become and the process writing it; nullopt for other names.
std::optional<std::pair<std::string, pid_t>> parse_temp_file_name(std::string_view file_name);

// The children of a directory, without following symlinks, sorted by name.
enum class FileKind { directory, regular, symlink, other };
struct DirChild {
  std::string name;
  FileKind kind = FileKind::other;
  std::uintmax_t size = 0;    // regular files only
  std::int64_t mtime = 0;     // seconds since the epoch
};
std::vector<DirChild> list_dir(const Dir& dir);

// unlinkat: removes a file or a symlink itself (never its target). Returns false when it was
// already gone; throws Error(io) on other failures.
bool remove_file(const Dir& dir, const std::string& name);
// Removes the directory `name` in `parent` when it is empty; anything else is left as it is.
void remove_dir_if_empty(const Dir& parent, const std::string& name);

}  // namespace attnjit::cache
