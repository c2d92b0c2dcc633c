#include "cache/entry_store.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "cache/sidecar.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

namespace attnjit::cache {
namespace fs = std::filesystem;
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// Note: kill(pid, 0) fails with ESRCH only for a process that does not exist (here: in this PID
// namespace; a writer in another namespace sharing the cache loses its temporary and warns that
// it could not store, which costs a compile, never a wrong kernel).
bool process_is_dead(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

fs::path default_cache_dir() {
  if (auto dir = env("ATTNJIT_CACHE_DIR"); !dir.empty()) return dir;
  if (auto dir = env("XDG_CACHE_HOME"); !dir.empty()) return fs::path(dir) / "attnjit";
  if (auto home = env("HOME"); !home.empty()) return fs::path(home) / ".cache" / "attnjit";
  std::error_code ec;
  fs::path temp = fs::temp_directory_path(ec);
  if (ec) temp = "/tmp";
  // Note: per user, never a shared name another user could create first; open_root refuses it
  // anyway when someone else owns it or can write to it.
  fs::path dir = temp / ("attnjit-" + std::to_string(::geteuid()));
  static std::once_flag warned;
  std::call_once(warned, [&dir] {
    log().warn("kernel cache: neither HOME nor XDG_CACHE_HOME is set; using {} (set "
               "ATTNJIT_CACHE_DIR to choose)",
               dir.string());
  });
  return dir;
}

EntryStore::EntryStore(fs::path root, StoreOptions options)
    : root_(std::move(root)), options_(options) {}

fs::path EntryStore::directory(const EntryId& id) const {
  return root_ / kLayoutDir / id.arch / version_dir_name(id.cuda_version);
}

fs::path EntryStore::binary_path(const EntryId& id) const {
  return directory(id) / binary_file_name(id);
}

fs::path EntryStore::sidecar_path(const EntryId& id) const {
  return directory(id) / sidecar_file_name(id);
}

std::optional<Dir> EntryStore::open_entry_dir(const EntryId& id, bool create) const {
  const uid_t user = options_.user;
  auto root = open_root(root_, create, user);
  if (!root) return std::nullopt;
  auto layout = open_dir(*root, kLayoutDir, create, user);
  if (!layout) return std::nullopt;
  auto arch = open_dir(*layout, id.arch, create, user);
  if (!arch) return std::nullopt;
  return open_dir(*arch, version_dir_name(id.cuda_version), create, user);
}

void EntryStore::create_root() const { open_root(root_, /*create=*/true, options_.user); }

LoadResult EntryStore::load(const EntryId& id, bool record_use) const {
  EntryId asked = id;
  if (asked.format.empty()) asked.format = "any";  // validated below as a name, then cleared
  validate_entry_id(asked);
  asked.format = id.format;
  const auto dir = open_entry_dir(id, /*create=*/false);
  LoadResult result;
  if (!dir) return result;
  try {
    const auto sidecar_file = open_file(*dir, sidecar_file_name(id), options_.user);
    if (!sidecar_file) return result;  // a miss (an orphan binary without sidecar is one too)
    nlohmann::json sidecar = parse_sidecar(read_all(*sidecar_file, kMaxSidecarBytes));
    if (sidecar.is_discarded()) {
      result.problem = "unreadable sidecar";
      return result;
    }
    if (result.problem = check_sidecar(sidecar, asked); !result.problem.empty()) return result;
    if (asked.format.empty()) asked.format = sidecar["format"].get<std::string>();
    const auto binary_file = open_file(*dir, binary_file_name(asked), options_.user);
    if (!binary_file) {
      result.problem = "binary missing";
      return result;
    }
    const std::string image = read_all(*binary_file, sidecar["size"].get<std::uintmax_t>());
    if (result.problem = check_binary(sidecar, image); !result.problem.empty()) return result;
    // Note: by descriptor, so the time lands on the file checked; an error (a root-owned entry
    // in another user's cache, a read-only file system) only loses the record.
    if (record_use) ::futimens(sidecar_file->fd.get(), nullptr);
    result.entry = StoredEntry{std::vector<char>(image.begin(), image.end()), std::move(sidecar),
                               binary_file->path};
  } catch (const Error& e) {
    result.problem = e.what();
  }
  return result;
}

void EntryStore::remove_dead_writers_temporaries(const Dir& dir, const EntryId& id) const {
  const std::string binary = binary_file_name(id), sidecar = sidecar_file_name(id);
  for (const DirChild& child : list_dir(dir)) {
    const auto temp = parse_temp_file_name(child.name);
    if (!temp || (temp->first != binary && temp->first != sidecar)) continue;
    if (child.kind != FileKind::directory && process_is_dead(temp->second)) {
      remove_file(dir, child.name);
    }
  }
}

fs::path EntryStore::store(const EntryId& id, std::span<const char> binary,
                           const nlohmann::json& fields) const {
  validate_entry_id(id);
  const auto dir = open_entry_dir(id, /*create=*/true);
  remove_dead_writers_temporaries(*dir, id);
  // Binary first, sidecar last: the sidecar's presence commits the entry.
  write_file_atomic(*dir, binary_file_name(id), binary);
  write_file_atomic(*dir, sidecar_file_name(id), serialize_sidecar(make_sidecar(id, binary, fields)));
  return dir->path / binary_file_name(id);
}

LockAttempt EntryStore::lock(const EntryId& id) const {
  try {
    validate_entry_id(id);
    const auto dir = open_entry_dir(id, /*create=*/true);
    return acquire_lock(*dir, lock_file_name(id), options_.lock_timeout, options_.user);
  } catch (const Error& e) {
    LockAttempt attempt;
    attempt.problem = e.what();
    return attempt;
  }
}

}  // namespace attnjit::cache
