#include "cache/cache_admin.hpp"

#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <limits>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "store_test_entries.hpp"

using namespace attnjit;
using namespace attnjit::test;
namespace fs = std::filesystem;

namespace {

// Two sm_90 entries and one sm_80 entry, plus a stale temporary file.
struct PopulatedCache {
  TempDir dir;
  cache::EntryStore store{dir.path()};
  std::string stale_temp;
  PopulatedCache() {
    store_test_entry(store, 21, "sm_90");
    store_test_entry(store, 22, "sm_90");
    store_test_entry(store, 21, "sm_80");
    stale_temp = (store.directory(test_id(21)) / ".abc.cubin.tmp.1.0").string();
    std::ofstream(stale_temp) << "partial";
  }
  // Pretends the entry was created `age` ago.
  void age_entry(const cache::EntryInfo& entry, std::chrono::seconds age) {
    edit_sidecar(entry.sidecar, [&](nlohmann::json& json) {
      json["created_unix"] = json["created_unix"].get<std::int64_t>() - age.count();
    });
  }
};

}  // namespace

TEST_CASE("list_entries names arch, CUDA version, variant, size and age", "[cache][admin]") {
  PopulatedCache populated;
  const auto entries = cache::list_entries(populated.dir.path());
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].arch == "sm_80");
  CHECK(entries[1].arch == "sm_90");
  CHECK(entries[2].arch == "sm_90");
  for (const auto& entry : entries) {
    CHECK(entry.cuda_version == "13.0");
    CHECK(entry.size > 0);
    CHECK(entry.size == fs::file_size(entry.binary));
    CHECK(entry.age < std::chrono::seconds(60));
    CHECK(entry.summary.find("mask='true'") != std::string::npos);
    CHECK(entry.summary.find("bf16 d64") != std::string::npos);
    CHECK(entry.name == "bf16-d64-" + entry.key);
    CHECK(entry.binary.filename() == entry.name + ".cubin");
  }
  CHECK(cache::list_entries(populated.dir.path() / "missing").empty());
}

TEST_CASE("verify_entries reports the damaged entries", "[cache][admin]") {
  PopulatedCache populated;
  CHECK(cache::verify_entries(populated.dir.path()).empty());
  auto entries = cache::list_entries(populated.dir.path());
  fs::resize_file(entries[0].binary, 10);
  std::ofstream(entries[1].sidecar) << "not json";
  fs::remove(entries[2].binary);
  const auto problems = cache::verify_entries(populated.dir.path());
  REQUIRE(problems.size() == 3);
  CHECK(problems[0].reason.find("binary has 10 bytes") != std::string::npos);
  CHECK(problems[1].reason == "unreadable sidecar");
  CHECK(problems[2].reason == "binary missing");
}

TEST_CASE("check_entries gives every entry, the sound ones with no reason", "[cache][admin]") {
  PopulatedCache populated;
  auto entries = cache::list_entries(populated.dir.path());
  fs::resize_file(entries[1].binary, 10);
  const auto checked = cache::check_entries(populated.dir.path());
  REQUIRE(checked.size() == 3);
  for (std::size_t i = 0; i < checked.size(); ++i) CHECK(checked[i].entry.name == entries[i].name);
  CHECK(checked[0].reason.empty());
  CHECK(checked[1].reason.find("binary has 10 bytes") != std::string::npos);
  CHECK(checked[2].reason.empty());
}

TEST_CASE("clear_entries removes all, one arch, or old entries", "[cache][admin]") {
  PopulatedCache populated;
  const fs::path root = populated.dir.path();
  SECTION("all, temporaries included") {
    const auto result = cache::clear_entries(root, {});
    CHECK(result.entries == 3);
    CHECK(result.bytes > 0);
    CHECK(cache::list_entries(root).empty());
    CHECK_FALSE(fs::exists(populated.stale_temp));
    CHECK_FALSE(fs::exists(root / "v1"));
  }
  SECTION("one arch") {
    const auto result = cache::clear_entries(root, {.arch = "sm_90", .older_than = {}, .max_bytes = {}});
    CHECK(result.entries == 2);
    const auto left = cache::list_entries(root);
    REQUIRE(left.size() == 1);
    CHECK(left[0].arch == "sm_80");
  }
  SECTION("older than") {
    populated.age_entry(cache::list_entries(root)[1], std::chrono::hours(24 * 8));
    const auto result = cache::clear_entries(
        root, {.arch = {}, .older_than = std::chrono::hours(24 * 7), .max_bytes = {}});
    CHECK(result.entries == 1);
    CHECK(cache::list_entries(root).size() == 2);
  }
}

TEST_CASE("clear_entries with a size cap removes the least recently used entries",
          "[cache][admin]") {
  PopulatedCache populated;
  const fs::path root = populated.dir.path();
  auto entries = cache::list_entries(root);
  REQUIRE(entries.size() == 3);
  // Last used: entries[1] a day ago, entries[0] an hour ago, entries[2] now.
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(entries[1].sidecar, now - std::chrono::hours(24));
  fs::last_write_time(entries[0].sidecar, now - std::chrono::hours(1));
  entries = cache::list_entries(root);
  CHECK(entries[1].unused >= std::chrono::hours(23));

  SECTION("a cap that fits everything removes nothing") {
    const std::uintmax_t all = entries[0].size + entries[1].size + entries[2].size;
    CHECK(cache::clear_entries(root, {.arch = {}, .older_than = {}, .max_bytes = all}).entries ==
          0);
    CHECK(cache::list_entries(root).size() == 3);
  }
  SECTION("a cap one byte short removes the least recently used entry only") {
    const std::uintmax_t all = entries[0].size + entries[1].size + entries[2].size;
    const auto result =
        cache::clear_entries(root, {.arch = {}, .older_than = {}, .max_bytes = all - 1});
    CHECK(result.entries == 1);
    const auto left = cache::list_entries(root);
    REQUIRE(left.size() == 2);
    CHECK(left[0].key == entries[0].key);
    CHECK(left[1].key == entries[2].key);
  }
  SECTION("a zero cap removes every selected entry and keeps the temporaries") {
    CHECK(cache::clear_entries(root, {.arch = {}, .older_than = {}, .max_bytes = 0}).entries == 3);
    CHECK(fs::exists(populated.stale_temp));
  }
  SECTION("a disk hit counts as a use") {
    for (const auto& entry : entries) {
      fs::last_write_time(entry.sidecar, now - std::chrono::hours(24));
    }
    REQUIRE(populated.store.load(test_id(22)).entry);  // a use, as the loader records it
    int recently_used = 0;
    for (const auto& entry : cache::list_entries(root)) {
      recently_used += entry.unused < std::chrono::minutes(1) ? 1 : 0;
    }
    CHECK(recently_used == 1);
  }
}

TEST_CASE("a cache root that does not exist is an empty cache, cleared as one", "[cache][admin]") {
  TempDir dir;
  const fs::path missing = dir.path() / "missing";
  CHECK(cache::list_entries(missing).empty());
  CHECK(cache::check_entries(missing).empty());
  const auto result = cache::clear_entries(missing, {});
  CHECK(result.entries == 0);
  CHECK(result.files == 0);
  CHECK_FALSE(fs::exists(missing));
}

TEST_CASE("a cache root that is a file is an error, not an empty cache", "[cache][admin]") {
  TempDir dir;
  const fs::path file = dir.path() / "not-a-dir";
  std::ofstream(file) << "x";
  for (const auto& call : std::initializer_list<std::function<void()>>{
           [&] { cache::list_entries(file); }, [&] { cache::verify_entries(file); },
           [&] { cache::clear_entries(file, {}); }}) {
    try {
      call();
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.status() == Status::io);
      CHECK_THAT(e.what(), Catch::Contains("is not a directory"));
    }
  }
}

TEST_CASE("sidecars with fields of the wrong type are listed and cleared, not thrown on",
          "[cache][admin]") {
  PopulatedCache populated;
  const fs::path root = populated.dir.path();
  const auto entries = cache::list_entries(root);
  edit_sidecar(entries[0].sidecar, [](nlohmann::json& json) {
    json["format"] = 42;
    json["created_unix"] = std::numeric_limits<std::int64_t>::min();
    json["summary"] = nlohmann::json::array();
  });
  edit_sidecar(entries[1].sidecar, [](nlohmann::json& json) {
    json["format"] = "../x";
    json["created_unix"] = std::numeric_limits<std::uint64_t>::max();
  });

  const auto listed = cache::list_entries(root);
  REQUIRE(listed.size() == 3);
  CHECK(listed[0].binary.empty());
  CHECK(listed[1].binary.empty());
  CHECK(listed[0].summary == "(no summary)");
  CHECK(listed[1].age == std::chrono::seconds(0));
  CHECK(cache::verify_entries(root).size() == 2);
  CHECK(cache::clear_entries(root, {}).entries == 3);
  CHECK(cache::list_entries(root).empty());
}

TEST_CASE("verify reports what the loader refuses, with the loader's reasons", "[cache][admin]") {
  PopulatedCache populated;
  const fs::path root = populated.dir.path();
  const cache::EntryStore& store = populated.store;
  SECTION("an entry's files copied under another entry's names") {
    fs::copy_file(store.binary_path(test_id(22)), store.binary_path(test_id(21)),
                  fs::copy_options::overwrite_existing);
    fs::copy_file(store.sidecar_path(test_id(22)), store.sidecar_path(test_id(21)),
                  fs::copy_options::overwrite_existing);
    const auto problems = cache::verify_entries(root);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].entry.key == test_id(21).key);
    CHECK_THAT(problems[0].reason, Catch::Contains("records key '" + test_id(22).key + "'"));
  }
  SECTION("a FIFO for a binary, without blocking") {
    fs::remove(store.binary_path(test_id(22)));
    REQUIRE(::mkfifo(store.binary_path(test_id(22)).c_str(), 0600) == 0);
    const auto code = exit_code_within(
        [&] {
          const auto problems = cache::verify_entries(root);
          return problems.size() == 1 &&
                         problems[0].reason.find("not a regular file") != std::string::npos
                     ? 0
                     : 1;
        },
        std::chrono::seconds(20));
    CHECK(code == std::optional<int>(0));
  }
  SECTION("a symlinked version directory") {
    TempDir outside;
    fs::create_directory_symlink(outside.path(), root / "v1" / "sm_90" / "cuda-12.0");
    const auto problems = cache::verify_entries(root);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].entry.sidecar == root / "v1" / "sm_90" / "cuda-12.0");
    CHECK(problems[0].entry.arch == "sm_90");
    CHECK(problems[0].entry.cuda_version == "12.0");
    CHECK_THAT(problems[0].reason, Catch::Contains("symbolic link"));
  }
  SECTION("a root that all users can write") {
    fs::permissions(root, fs::perms(0777));
    const auto problems = cache::verify_entries(root);
    REQUIRE(problems.size() == 3);
    CHECK_THAT(problems[0].reason, Catch::Contains("writable by all users"));
  }
}

// An entry's worth of files outside the cache, reachable only through symlinks planted in it.
struct PlantedLinks {
  TempDir outside;
  std::vector<fs::path> targets;
  explicit PlantedLinks(const fs::path& root) {
    const cache::EntryStore elsewhere(outside.path() / "cache");
    targets.push_back(store_test_entry(elsewhere, 30, "sm_90"));
    targets.push_back(elsewhere.sidecar_path(test_id(30)));
    targets.push_back(outside.path() / "precious.cubin");
    overwrite(targets.back(), "not ours");
    const fs::path elsewhere_version = targets[0].parent_path();
    // A symlinked version folder, a symlinked arch folder, and a binary linked to a file.
    fs::create_directory_symlink(elsewhere_version, root / "v1" / "sm_90" / "cuda-12.0");
    fs::create_directory_symlink(elsewhere_version.parent_path(), root / "v1" / "sm_86");
    const cache::EntryStore store(root);
    fs::remove(store.binary_path(test_id(22)));
    fs::create_symlink(targets.back(), store.binary_path(test_id(22)));
  }
  void check_untouched() const {
    for (const fs::path& target : targets) {
      INFO(target);
      CHECK(fs::is_regular_file(target));
    }
    CHECK(slurp(targets.back()) == "not ours");
  }
};

TEST_CASE("cache clear in every form removes links, never what they point to", "[cache][admin][symlink]") {
  PopulatedCache populated;
  const fs::path root = populated.dir.path();
  const PlantedLinks links(root);
  CHECK(cache::list_entries(root).size() == 3);  // nothing listed through a link

  SECTION("everything") {
    cache::clear_entries(root, {});
    links.check_untouched();
    CHECK_FALSE(fs::exists(fs::symlink_status(root / "v1")));
  }
  SECTION("down to a size of zero") {
    // The entry whose binary is a link has no size to count, and is the most recently used: the
    // other two go, and then the rest fits. Note: use is the sidecar's mtime in whole seconds,
    // so the order is set here; entries stored a second apart would otherwise order by chance
    // (the least recently used go first, a link among them).
    const auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
    fs::last_write_time(populated.store.sidecar_path(test_id(21, "sm_90")), an_hour_ago);
    fs::last_write_time(populated.store.sidecar_path(test_id(21, "sm_80")), an_hour_ago);
    CHECK(cache::clear_entries(root, {.arch = {}, .older_than = {}, .max_bytes = 0}).entries == 2);
    links.check_untouched();
  }
  SECTION("one arch") {
    CHECK(cache::clear_entries(root, {.arch = "sm_90", .older_than = {}, .max_bytes = {}}).entries == 2);
    links.check_untouched();
    // The entry whose binary was a link: the link is gone with it.
    CHECK_FALSE(fs::exists(fs::symlink_status(populated.store.binary_path(test_id(22)))));
  }
  SECTION("older than zero") {
    cache::clear_entries(root, {.arch = {}, .older_than = std::chrono::seconds(0), .max_bytes = {}});
    links.check_untouched();
  }
}

TEST_CASE("cache clear removes a symlinked v1 itself, not its target", "[cache][admin][symlink]") {
  TempDir root, outside;
  const cache::EntryStore elsewhere(outside.path());
  const fs::path binary = store_test_entry(elsewhere, 1);
  fs::create_directory_symlink(outside.path() / "v1", root.path() / "v1");
  CHECK(cache::list_entries(root.path()).empty());
  cache::clear_entries(root.path(), {.arch = {}, .older_than = {}, .max_bytes = 0});
  CHECK(fs::exists(binary));
  cache::clear_entries(root.path(), {});
  CHECK(fs::exists(binary));
  CHECK_FALSE(fs::exists(fs::symlink_status(root.path() / "v1")));
}
