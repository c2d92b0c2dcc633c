#include "cache/cache_fs.hpp"

#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_test_support.hpp"
#include "common/error.hpp"

using namespace attnjit;
using namespace attnjit::test;
namespace fs = std::filesystem;

namespace {

struct stat with(uid_t owner, mode_t mode) {
  struct stat info {};
  info.st_uid = owner;
  info.st_mode = S_IFDIR | mode;
  return info;
}

}  // namespace

// Note: a pure function of the stat fields, so this runs the same as root as as anyone.
TEST_CASE("trust: owned by the user or root, writable by nobody else", "[cache][fs][permissions]") {
  constexpr uid_t kUser = 1000;
  CHECK(cache::trust_problem(with(kUser, 0700), kUser).empty());
  CHECK(cache::trust_problem(with(kUser, 0755), kUser).empty());
  CHECK(cache::trust_problem(with(kUser, 0644), kUser).empty());
  CHECK(cache::trust_problem(with(0, 0755), kUser).empty());
  CHECK(cache::trust_problem(with(4242, 0700), kUser) ==
        "it is owned by user 4242, not by user 1000 or root");
  CHECK(cache::trust_problem(with(kUser, 0777), kUser) == "it is writable by all users (mode 0777)");
  CHECK(cache::trust_problem(with(kUser, 01777), kUser) == "it is writable by all users (mode 1777)");
  CHECK(cache::trust_problem(with(kUser, 0770), kUser) == "it is writable by its group (mode 0770)");
  CHECK(cache::trust_problem(with(0, 0722), kUser) == "it is writable by all users (mode 0722)");
}

TEST_CASE("temporary file names carry the file they become and their writer", "[cache][fs]") {
  const std::string name = cache::temp_file_name("bf16-d64-abc.cubin", 1234, 5);
  CHECK(name == ".bf16-d64-abc.cubin.tmp.1234.5");
  CHECK(cache::is_temp_file_name(name));
  const auto parsed = cache::parse_temp_file_name(name);
  REQUIRE(parsed);
  CHECK(parsed->first == "bf16-d64-abc.cubin");
  CHECK(parsed->second == 1234);
  for (const char* other : {"bf16-d64-abc.cubin", ".x.tmp.", ".x.tmp.12", ".x.tmp.a.1", ".x.tmp.0.1",
                            ".x.tmp.12.3z", ".tmp.1.2"}) {
    INFO(other);
    CHECK_FALSE(cache::parse_temp_file_name(other));
  }
}

TEST_CASE("files are read whole, regular only, and never past a limit", "[cache][fs]") {
  TempDir dir;
  auto root = cache::open_root(dir.path(), false, ::geteuid());
  REQUIRE(root);
  overwrite(dir.path() / "file", "0123456789");
  const auto file = cache::open_file(*root, "file", ::geteuid());
  REQUIRE(file);
  CHECK(cache::read_all(*file, 10) == "0123456789");
  CHECK_THROWS_WITH(cache::read_all(*file, 9), Catch::Contains("has 10 bytes, more than the 9"));
  CHECK_FALSE(cache::open_file(*root, "missing", ::geteuid()));
  fs::create_directory(dir.path() / "sub");
  CHECK_THROWS_WITH(cache::open_file(*root, "sub", ::geteuid()),
                    Catch::Contains("not a regular file"));
  fs::create_symlink(dir.path() / "file", dir.path() / "link");
  CHECK_THROWS_WITH(cache::open_file(*root, "link", ::geteuid()),
                    Catch::Contains("symbolic link"));
  CHECK_THROWS_WITH(cache::open_dir(*root, "link", false, ::geteuid()),
                    Catch::Contains("symbolic link"));
}

TEST_CASE("listing a directory names each child's kind without following links", "[cache][fs]") {
  TempDir dir;
  overwrite(dir.path() / "b-file", "12345");
  fs::create_directory(dir.path() / "a-dir");
  fs::create_directory_symlink(dir.path() / "a-dir", dir.path() / "c-link");
  REQUIRE(::mkfifo((dir.path() / "d-fifo").c_str(), 0600) == 0);
  const auto root = cache::open_root(dir.path(), false, std::nullopt);
  const auto children = cache::list_dir(*root);
  REQUIRE(children.size() == 4);
  CHECK(children[0].kind == cache::FileKind::directory);
  CHECK(children[1].kind == cache::FileKind::regular);
  CHECK(children[1].size == 5);
  CHECK(children[2].kind == cache::FileKind::symlink);
  CHECK(children[3].kind == cache::FileKind::other);
  CHECK(cache::remove_file(*root, "c-link"));
  CHECK(fs::exists(dir.path() / "a-dir"));
  CHECK_FALSE(cache::remove_file(*root, "c-link"));
}
