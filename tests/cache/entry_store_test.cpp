#include "cache/entry_store.hpp"

#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.hpp"
#include "store_test_entries.hpp"

using namespace attnjit;
using namespace attnjit::test;
using cache::EntryStore;
namespace fs = std::filesystem;

namespace {

// A directory named like an entry's directory whose contents the tests must never touch.
struct Outside {
  TempDir dir;
  fs::path file(const std::string& name) const { return dir.path() / name; }
};

// Store options under which `path` (already in the cache) belongs to another user: chown when
// running as root (who may), else a store that believes it runs as someone else, for whom
// every file this process made is another user's.
cache::StoreOptions owned_by_another_user(const fs::path& path) {
  cache::StoreOptions options;
  if (::geteuid() == 0) {
    REQUIRE(::lchown(path.c_str(), 4242, static_cast<gid_t>(-1)) == 0);
  } else {
    options.user = ::geteuid() + 1;
  }
  return options;
}

pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

}  // namespace

TEST_CASE("an entry is stored under readable names and loads back whole", "[cache][store]") {
  TempDir dir;
  const EntryStore store(dir.path() / "cache");
  const cache::EntryId id = test_id(1);
  const fs::path binary = store_test_entry(store, 1);
  const fs::path entry_dir = dir.path() / "cache" / "v1" / "sm_90" / "cuda-13.0";
  CHECK(binary == entry_dir / ("bf16-d64-" + id.key + ".cubin"));
  CHECK(store.binary_path(id) == binary);
  CHECK(store.sidecar_path(id) == entry_dir / ("bf16-d64-" + id.key + ".json"));
  CHECK(slurp(binary) == test_binary(1));

  const cache::LoadResult loaded = store.load(id);
  REQUIRE(loaded.entry);
  CHECK(loaded.problem.empty());
  CHECK(std::string(loaded.entry->binary.begin(), loaded.entry->binary.end()) == test_binary(1));
  CHECK(loaded.entry->binary_path == binary);
  const nlohmann::json& sidecar = loaded.entry->sidecar;
  CHECK(sidecar["summary"] == test_fields(1)["summary"]);
  CHECK(sidecar["key"] == id.key);
  CHECK(sidecar["arch"] == "sm_90");
  CHECK(sidecar["cuda_version"] == "13.0");
  CHECK(sidecar["format"] == "cubin");
  CHECK(sidecar["file"] == binary.filename().string());
  CHECK(sidecar["size"] == test_binary(1).size());
  CHECK(sidecar["checksum"] == cache::checksum(test_binary(1)));
  CHECK(sidecar["integrity"].get<std::string>().starts_with("xxh3-64:"));

  const cache::LoadResult absent = store.load(test_id(2));
  CHECK_FALSE(absent.entry);
  CHECK(absent.problem.empty());
  CHECK_FALSE(store.load(test_id(1, "sm_80")).entry);
}

TEST_CASE("the store makes its directories 0700 and its files 0600 whatever the umask",
          "[cache][store][permissions]") {
  const mode_t mask = GENERATE(mode_t{0}, mode_t{0777});
  TempDir dir;
  const fs::path root = dir.path() / "parent" / "cache";
  {
    const ScopedUmask umask(mask);
    const EntryStore store(root);
    store_test_entry(store, 1);
    REQUIRE(store.lock(test_id(1)).outcome == cache::LockOutcome::held);
  }
  const fs::path entry_dir = root / "v1" / "sm_90" / "cuda-13.0";
  for (const fs::path& path : {dir.path() / "parent", root, root / "v1", root / "v1" / "sm_90", entry_dir}) {
    INFO(path);
    CHECK(file_mode(path) == 0700);
  }
  for (const char* extension : {".cubin", ".json", ".lock"}) {
    const fs::path path = entry_dir / ("bf16-d64-" + test_id(1).key + extension);
    INFO(path);
    CHECK(file_mode(path) == 0600);
  }
}

TEST_CASE("a cache root or directory that other users can write or own is refused",
          "[cache][store][permissions]") {
  TempDir dir;
  const fs::path root = dir.path() / "cache";
  store_test_entry(EntryStore(root), 1);
  const fs::path version_dir = root / "v1" / "sm_90" / "cuda-13.0";
  const auto expect_refused = [&](const EntryStore& store, const std::string& reason) {
    try {
      store.load(test_id(1));
      FAIL("expected the store to be refused");
    } catch (const Error& e) {
      CHECK(e.status() == Status::cache);
      CHECK_THAT(e.what(), Catch::Contains("refusing") && Catch::Contains(reason));
    }
    CHECK_THROWS_AS(store_test_entry(store, 2), Error);
    const auto lock = store.lock(test_id(1));
    CHECK(lock.outcome == cache::LockOutcome::unavailable);
    CHECK_THAT(lock.problem, Catch::Contains(reason));
  };
  SECTION("root writable by all") {
    fs::permissions(root, fs::perms(0777));
    expect_refused(EntryStore(root), "writable by all users (mode 0777)");
  }
  SECTION("directory writable by its group") {
    fs::permissions(version_dir, fs::perms(0770));
    expect_refused(EntryStore(root), "writable by its group");
  }
  SECTION("root owned by another user") {
    const auto options = owned_by_another_user(root);
    expect_refused(EntryStore(root, options), "owned by user");
  }
  CHECK_FALSE(fs::exists(version_dir / ("bf16-d64-" + test_id(2).key + ".json")));
}

TEST_CASE("an entry file that other users can write or own is refused, then replaced",
          "[cache][store][permissions]") {
  TempDir dir;
  const EntryStore mine(dir.path());
  const fs::path binary = store_test_entry(mine, 1);
  const fs::path sidecar = mine.sidecar_path(test_id(1));
  cache::StoreOptions options;
  std::string reason;
  SECTION("sidecar writable by all") {
    fs::permissions(sidecar, fs::perms(0666));
    reason = "writable by all users";
  }
  SECTION("binary owned by another user") {
    options = owned_by_another_user(binary);
    reason = "owned by user";
    if (::geteuid() != 0) return;  // every file is another user's then; the root case covers it
  }
  const EntryStore store(dir.path(), options);
  const cache::LoadResult loaded = store.load(test_id(1));
  CHECK_FALSE(loaded.entry);
  CHECK_THAT(loaded.problem, Catch::Contains("refusing") && Catch::Contains(reason));
  store_test_entry(store, 1);  // rename replaces the refused file: the directory is ours
  CHECK(store.load(test_id(1)).entry);
  CHECK(file_mode(sidecar) == 0600);
}

TEST_CASE("symlinks inside the cache are never followed", "[cache][store][symlink]") {
  TempDir dir;
  Outside outside;
  const EntryStore store(dir.path());
  const fs::path binary = store_test_entry(store, 1);
  const fs::path sidecar = store.sidecar_path(test_id(1));
  SECTION("binary -> /dev/zero") {
    fs::remove(binary);
    fs::create_symlink("/dev/zero", binary);
    const auto code = exit_code_within(
        [&] {
          const auto loaded = store.load(test_id(1));
          return !loaded.entry && loaded.problem.find("symbolic link") != std::string::npos ? 0 : 1;
        },
        std::chrono::seconds(20));
    CHECK(code == std::optional<int>(0));
    store_test_entry(store, 1);  // replaces the link, writes nothing through it
    CHECK(fs::is_regular_file(fs::symlink_status(binary)));
    CHECK(store.load(test_id(1)).entry);
  }
  SECTION("sidecar -> a whole sidecar elsewhere") {
    fs::copy_file(sidecar, outside.file("entry.json"));
    fs::remove(sidecar);
    fs::create_symlink(outside.file("entry.json"), sidecar);
    const auto loaded = store.load(test_id(1));
    CHECK_FALSE(loaded.entry);
    CHECK_THAT(loaded.problem, Catch::Contains("symbolic link"));
  }
  SECTION("version directory -> a directory elsewhere") {
    const fs::path version_dir = binary.parent_path();
    fs::rename(version_dir, outside.file("cuda-13.0"));
    fs::create_directory_symlink(outside.file("cuda-13.0"), version_dir);
    CHECK_THROWS_WITH(store.load(test_id(1)), Catch::Contains("symbolic link"));
    CHECK_THROWS_AS(store_test_entry(store, 2), Error);
    CHECK_FALSE(fs::exists(outside.file("cuda-13.0") / store.binary_path(test_id(2)).filename()));
  }
  SECTION("lock file -> a path elsewhere") {
    const fs::path lock = binary.parent_path() / ("bf16-d64-" + test_id(1).key + ".lock");
    fs::create_symlink(outside.file("planted"), lock);
    const auto attempt = store.lock(test_id(1));
    CHECK(attempt.outcome == cache::LockOutcome::unavailable);
    CHECK_THAT(attempt.problem, Catch::Contains("symbolic link"));
    CHECK_FALSE(fs::exists(outside.file("planted")));
  }
}

TEST_CASE("FIFOs where entry files belong are refused without blocking", "[cache][store]") {
  TempDir dir;
  const EntryStore store(dir.path());
  const fs::path binary = store_test_entry(store, 1);
  const fs::path sidecar = store.sidecar_path(test_id(1));
  const fs::path lock = binary.parent_path() / ("bf16-d64-" + test_id(1).key + ".lock");
  const fs::path fifo = GENERATE_COPY(binary, sidecar, lock);
  INFO(fifo);
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto code = exit_code_within(
      [&] {
        const std::string problem = fifo == lock ? store.lock(test_id(1)).problem
                                                 : store.load(test_id(1)).problem;
        return problem.find("not a regular file") != std::string::npos ? 0 : 1;
      },
      std::chrono::seconds(20));
  CHECK(code == std::optional<int>(0));
}

TEST_CASE("sizes are bounded before anything is read", "[cache][store]") {
  TempDir dir;
  const EntryStore store(dir.path());
  const fs::path binary = store_test_entry(store, 1);
  const fs::path sidecar = store.sidecar_path(test_id(1));
  SECTION("a sidecar recording a binary above the maximum") {
    const auto huge = cache::kMaxBinaryBytes + 1;
    fs::resize_file(binary, huge);  // sparse
    edit_sidecar(sidecar, [&](nlohmann::json& json) { json["size"] = huge; });
    CHECK_THAT(store.load(test_id(1)).problem, Catch::Contains("more than the"));
  }
  SECTION("a binary larger than its sidecar records") {
    fs::resize_file(binary, std::uintmax_t{1} << 40);  // sparse: a terabyte
    CHECK_THAT(store.load(test_id(1)).problem, Catch::Contains("more than the"));
  }
  SECTION("a sidecar above its maximum") {
    fs::resize_file(sidecar, cache::kMaxSidecarBytes + 1);
    CHECK_THAT(store.load(test_id(1)).problem, Catch::Contains("more than the"));
  }
  SECTION("a truncated binary") {
    fs::resize_file(binary, 10);
    CHECK_THAT(store.load(test_id(1)).problem, Catch::Contains("binary has 10 bytes"));
  }
}

TEST_CASE("an entry's files copied under another entry's names are refused", "[cache][store]") {
  TempDir dir;
  const EntryStore store(dir.path());
  store_test_entry(store, 1);
  const auto copy_over = [&](const cache::EntryId& from, const cache::EntryId& to) {
    fs::create_directories(store.directory(to));
    fs::copy_file(store.binary_path(from), store.binary_path(to), fs::copy_options::overwrite_existing);
    fs::copy_file(store.sidecar_path(from), store.sidecar_path(to), fs::copy_options::overwrite_existing);
  };
  SECTION("another key") {
    store_test_entry(store, 2);
    copy_over(test_id(2), test_id(1));
    CHECK_THAT(store.load(test_id(1)).problem,
               Catch::Contains("records key '" + test_id(2).key + "'"));
  }
  SECTION("another arch") {
    store_test_entry(store, 1, "sm_80");
    copy_over(test_id(1, "sm_80"), test_id(1));
    CHECK_THAT(store.load(test_id(1)).problem, Catch::Contains("records arch 'sm_80'"));
  }
  SECTION("another CUDA version") {
    cache::EntryId old_cuda = test_id(1);
    old_cuda.cuda_version = "12.4";
    store.store(old_cuda, test_binary(1), test_fields(1));
    copy_over(old_cuda, test_id(1));
    CHECK_THAT(store.load(test_id(1)).problem, Catch::Contains("records cuda_version '12.4'"));
  }
  SECTION("another format") {
    CHECK_THAT(store.load(test_id(1, "sm_90", "ptx")).problem,
               Catch::Contains("records format 'cubin'"));
  }
}

TEST_CASE("the integrity check covers the whole sidecar", "[cache][store]") {
  TempDir dir;
  const EntryStore store(dir.path());
  store_test_entry(store, 1);
  const fs::path sidecar = store.sidecar_path(test_id(1));
  const bool reseal = GENERATE(false, true);
  edit_sidecar(sidecar, [](nlohmann::json& json) { json["variant"]["mask"] = "false"; }, reseal);
  const auto loaded = store.load(test_id(1));
  CHECK(loaded.entry.has_value() == reseal);
  if (!reseal) CHECK_THAT(loaded.problem, Catch::Contains("integrity check failed"));
}

TEST_CASE("the binary is the file the naming rule gives, whatever the sidecar says",
          "[cache][store]") {
  TempDir dir;
  const EntryStore store(dir.path());
  store_test_entry(store, 1);
  store_test_entry(store, 2);
  // Entry 1's sidecar pointing at entry 2's binary, with that binary's size and checksum.
  edit_sidecar(store.sidecar_path(test_id(1)), [&](nlohmann::json& json) {
    json["file"] = store.binary_path(test_id(2)).filename().string();
    json["size"] = test_binary(2).size();
    json["checksum"] = cache::checksum(test_binary(2));
  });
  CHECK_THAT(store.load(test_id(1)).problem, Catch::Contains("names the binary"));
}

TEST_CASE("the next writer of an entry removes the temporaries its dead writers left",
          "[cache][store]") {
  TempDir dir;
  const EntryStore store(dir.path());
  store_test_entry(store, 3);  // creates the directory
  const fs::path entry_dir = store.directory(test_id(1));
  const std::string binary = store.binary_path(test_id(1)).filename().string();
  const std::string sidecar = store.sidecar_path(test_id(1)).filename().string();
  const std::string other = store.binary_path(test_id(2)).filename().string();
  const pid_t dead = dead_pid();
  const fs::path dead_binary = entry_dir / cache::temp_file_name(binary, dead, 0);
  const fs::path dead_sidecar = entry_dir / cache::temp_file_name(sidecar, dead, 1);
  const fs::path live = entry_dir / cache::temp_file_name(binary, ::getpid(), 7);
  const fs::path other_entry = entry_dir / cache::temp_file_name(other, dead, 2);
  for (const fs::path& path : {dead_binary, dead_sidecar, live, other_entry}) overwrite(path, "partial");

  store_test_entry(store, 1);
  CHECK_FALSE(fs::exists(dead_binary));
  CHECK_FALSE(fs::exists(dead_sidecar));
  CHECK(fs::exists(live));         // its writer may still rename it
  CHECK(fs::exists(other_entry));  // another entry's writer cleans its own
  CHECK(store.load(test_id(1)).entry);
}

TEST_CASE("with neither HOME nor XDG_CACHE_HOME the root is a per-user temporary directory",
          "[cache][store][permissions]") {
  const ScopedEnv no_dir("ATTNJIT_CACHE_DIR", nullptr), no_xdg("XDG_CACHE_HOME", nullptr),
      no_home("HOME", nullptr), tmp("TMPDIR", "/tmp");
  LogCapture capture;
  const fs::path root = cache::default_cache_dir();
  CHECK(root == fs::path("/tmp") / ("attnjit-" + std::to_string(::geteuid())));
  cache::default_cache_dir();
  // Once per process: this test may not be the first to ask.
  CHECK(capture.count("neither HOME nor XDG_CACHE_HOME") <= 1);
}

TEST_CASE("the cache root comes from ATTNJIT_CACHE_DIR, XDG_CACHE_HOME, then HOME", "[cache][store]") {
  const ScopedEnv dir("ATTNJIT_CACHE_DIR", "/a/b"), xdg("XDG_CACHE_HOME", "/x"), home("HOME", "/h");
  CHECK(cache::default_cache_dir() == fs::path("/a/b"));
  ::unsetenv("ATTNJIT_CACHE_DIR");
  CHECK(cache::default_cache_dir() == fs::path("/x/attnjit"));
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(cache::default_cache_dir() == fs::path("/h/.cache/attnjit"));
}
