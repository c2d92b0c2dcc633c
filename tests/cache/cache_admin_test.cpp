#include "cache/cache_admin.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <limits>

#include <nlohmann/json.hpp>

#include "cache/file_io.hpp"
#include "cache_test_support.hpp"
#include "common/error.hpp"

using namespace attnjit;
using attnjit::test::lookup;
using attnjit::test::TempDir;
using attnjit::test::test_source;
namespace fs = std::filesystem;

namespace {

// Two sm_90 entries and one sm_80 entry, plus a stale temporary file.
struct PopulatedCache {
  TempDir dir;
  std::string stale_temp;
  PopulatedCache() {
    KernelCache cache(dir.path());
    lookup(cache, test_source(21), "sm_90");
    lookup(cache, test_source(22), "sm_90");
    lookup(cache, test_source(21), "sm_80");
    stale_temp = (cache.directory("sm_90", nvrtc::nvrtc_version()) / ".abc.cubin.tmp.1.0").string();
    std::ofstream(stale_temp) << "partial";
  }
  // Pretends the entry was created `age` ago.
  void age_entry(const cache::EntryInfo& entry, std::chrono::seconds age) {
    auto sidecar = nlohmann::json::parse(cache::read_file(entry.sidecar).value());
    sidecar["created_unix"] = sidecar["created_unix"].get<std::int64_t>() - age.count();
    std::ofstream(entry.sidecar) << sidecar.dump(2);
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
    CHECK(entry.cuda_version == nvrtc::nvrtc_version());
    CHECK(entry.size > 0);
    CHECK(entry.size == fs::file_size(entry.binary));
    CHECK(entry.age < std::chrono::seconds(60));
    CHECK(entry.summary.find("mask='true'") != std::string::npos);
    CHECK(entry.summary.find("bf16 d64") != std::string::npos);
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
        root, {.arch = {}, .older_than = cache::parse_age("7d"), .max_bytes = {}});
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
    KernelCache fresh(root);
    lookup(fresh, test_source(22), "sm_90");  // from disk: the cache object is new
    int recently_used = 0;
    for (const auto& entry : cache::list_entries(root)) {
      recently_used += entry.unused < std::chrono::minutes(1) ? 1 : 0;
    }
    CHECK(recently_used == 1);
  }
}

TEST_CASE("sizes parse from 4096, 100K, 512M, 2G, 1T, with an optional B or iB", "[cache][admin]") {
  CHECK(cache::parse_size("4096") == 4096);
  CHECK(cache::parse_size("100K") == 100 * 1024);
  CHECK(cache::parse_size("512M") == 512ull << 20);
  CHECK(cache::parse_size("2G") == 2ull << 30);
  CHECK(cache::parse_size("2GiB") == 2ull << 30);
  CHECK(cache::parse_size("2GB") == 2ull << 30);
  CHECK(cache::parse_size("1T") == 1ull << 40);
  CHECK(cache::parse_size("0") == 0);
  for (const char* bad : {"", "M", "-1M", "2X", "1.5G", "99999999999999999999T", "2 G"}) {
    CHECK_THROWS_AS(cache::parse_size(bad), Error);
  }
}

TEST_CASE("ages parse from 45s, 30m, 12h, 7d, 2w", "[cache][admin]") {
  CHECK(cache::parse_age("45s") == std::chrono::seconds(45));
  CHECK(cache::parse_age("30m") == std::chrono::minutes(30));
  CHECK(cache::parse_age("12h") == std::chrono::hours(12));
  CHECK(cache::parse_age("7d") == std::chrono::hours(24 * 7));
  CHECK(cache::parse_age("2w") == std::chrono::hours(24 * 14));
  for (const char* bad : {"", "7", "d", "7x", "-1d", "7dd", "9223372036854775807w"}) {
    CHECK_THROWS_AS(cache::parse_age(bad), Error);
  }
  CHECK(cache::format_age(std::chrono::hours(49)) == "2d");
  CHECK(cache::format_age(std::chrono::seconds(59)) == "59s");
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
  auto sidecar = nlohmann::json::parse(cache::read_file(entries[0].sidecar).value());
  sidecar["file"] = 42;
  sidecar["created_unix"] = std::numeric_limits<std::int64_t>::min();
  sidecar["variant"]["mask"] = nlohmann::json::array();
  sidecar["variant"]["head_dim"] = "big";
  std::ofstream(entries[0].sidecar) << sidecar.dump(2);
  sidecar["file"] = "..";
  sidecar["created_unix"] = std::numeric_limits<std::uint64_t>::max();
  std::ofstream(entries[1].sidecar) << sidecar.dump(2);

  const auto listed = cache::list_entries(root);
  REQUIRE(listed.size() == 3);
  CHECK(listed[0].binary.empty());
  CHECK(listed[1].binary.empty());
  CHECK(listed[0].summary.find("mask='' ") != std::string::npos);
  CHECK(listed[1].age == std::chrono::seconds(0));
  CHECK(cache::verify_entries(root).size() == 2);
  CHECK(cache::clear_entries(root, {}).entries == 3);
  CHECK(cache::list_entries(root).empty());
}
