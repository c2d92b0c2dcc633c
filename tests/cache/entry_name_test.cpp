#include "cache/entry_name.hpp"

#include <catch2/catch.hpp>

#include "common/error.hpp"

using namespace attnjit;

TEST_CASE("an entry's files are named <label>-<key>.<ext>, and names parse back", "[cache][name]") {
  const std::string key(32, 'a');
  const cache::EntryId id{"sm_90", "13.0", "bf16-d128", key, "cubin"};
  CHECK(cache::entry_stem(id) == "bf16-d128-" + key);
  CHECK(cache::binary_file_name(id) == "bf16-d128-" + key + ".cubin");
  CHECK(cache::sidecar_file_name(id) == "bf16-d128-" + key + ".json");
  CHECK(cache::lock_file_name(id) == "bf16-d128-" + key + ".lock");
  CHECK(cache::version_dir_name("13.0") == "cuda-13.0");

  const auto parsed = cache::parse_sidecar_file_name(cache::sidecar_file_name(id));
  REQUIRE(parsed);
  CHECK(parsed->label == "bf16-d128");
  CHECK(parsed->key == key);
  const auto unlabelled = cache::parse_sidecar_file_name(key + ".json");
  REQUIRE(unlabelled);
  CHECK(unlabelled->label.empty());
  for (const std::string& other : {key + ".cubin", "." + key + ".json.tmp.1.2", "-" + key + ".json",
                                  "BF16-" + key + ".json", std::string("x-abc.json"),
                                  "bf16-d128-" + key + "x.json"}) {
    INFO(other);
    CHECK_FALSE(cache::parse_sidecar_file_name(other));
  }
  CHECK(cache::parse_version_dir_name("cuda-13.0") == std::optional<std::string>("13.0"));
  CHECK_FALSE(cache::parse_version_dir_name("cuda-.."));
  CHECK_FALSE(cache::parse_version_dir_name("13.0"));
}

TEST_CASE("entry ids that could not name a file are rejected", "[cache][name]") {
  const std::string key(32, 'b');
  const cache::EntryId good{"sm_90", "13.0", "fp16-d64", key, "ptx"};
  CHECK_NOTHROW(cache::validate_entry_id(good));
  auto with = [&](auto change) {
    cache::EntryId id = good;
    change(id);
    return id;
  };
  for (const cache::EntryId& bad : {
           with([](auto& id) { id.arch = ".."; }), with([](auto& id) { id.arch = "sm/90"; }),
           with([](auto& id) { id.cuda_version = ""; }), with([](auto& id) { id.label = "Bf16"; }),
           with([](auto& id) { id.label = "a/b"; }), with([](auto& id) { id.key = "../x"; }),
           with([](auto& id) { id.key = "abc"; }), with([](auto& id) { id.format = "json"; }),
           with([](auto& id) { id.format = "a.b"; })}) {
    CHECK_THROWS_AS(cache::validate_entry_id(bad), Error);
  }
}
