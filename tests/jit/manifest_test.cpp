#include "jit/manifest.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>

#include "../cache/cache_test_support.hpp"
#include "common/error.hpp"

using namespace attnjit;

namespace {

std::string error_of(std::string_view json) {
  try {
    parse_manifest(json, "m.json");
  } catch (const Error& e) {
    CHECK(e.status() == Status::invalid_argument);
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("the embedded standard manifest parses and expands", "[manifest]") {
  const Manifest& manifest = standard_manifest();
  REQUIRE(manifest.variants.size() == 7);
  CHECK(manifest.variants[0].name == "noop");
  const ManifestVariant& sliding = manifest.variants[2];
  CHECK(sliding.name == "sliding_window");
  REQUIRE(sliding.signature.params.size() == 1);
  CHECK(sliding.signature.params[0].name == "W");
  CHECK(sliding.example["params"]["W"] == 256);
  const ManifestVariant& document = manifest.variants[4];
  REQUIRE(document.signature.tensors.size() == 1);
  CHECK(document.signature.tensors[0].rank == 1);
  CHECK(document.dtypes == std::vector<DType>{DType::bf16, DType::fp16});
  CHECK(document.head_dims == std::vector<int>{64, 128});

  const auto specs = expand_manifest(manifest);
  CHECK(specs.size() == 7 * 2 * 2);
  CHECK(specs[0].name == "noop");
  CHECK(specs[0].spec.dtype == DType::bf16);
  CHECK(specs[0].spec.head_dim == 64);
  CHECK(specs[1].spec.head_dim == 128);
  CHECK(specs[2].spec.dtype == DType::fp16);
}

TEST_CASE("a variant overrides the default dtypes and head dims", "[manifest]") {
  const auto manifest = parse_manifest(R"({"version": 1, "dtypes": ["bf16"], "head_dims": [128],
      "variants": [{"name": "a"}, {"name": "b", "mask": "q_idx >= kv_idx", "dtypes": ["fp16"],
                    "head_dims": [64, 256]}]})", "m.json");
  const auto specs = expand_manifest(manifest);
  REQUIRE(specs.size() == 3);
  CHECK(specs[0].name == "a");
  CHECK(specs[0].spec.head_dim == 128);
  CHECK(specs[1].spec.dtype == DType::fp16);
  CHECK(specs[2].spec.head_dim == 256);
  CHECK(specs[2].spec.mask == "q_idx >= kv_idx");
}

TEST_CASE("paged_kv: the manifest's default, a variant's own, and a bad value", "[manifest]") {
  const auto manifest = parse_manifest(R"({"version": 1, "paged_kv": true,
      "variants": [{"name": "a"}, {"name": "b", "paged_kv": false}]})",
                                       "m.json");
  const auto specs = expand_manifest(manifest);
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].paged_kv);
  CHECK_FALSE(specs[1].paged_kv);
  const auto plain = parse_manifest(R"({"version": 1, "variants": [{"name": "a"}]})", "p.json");
  CHECK_FALSE(expand_manifest(plain)[0].paged_kv);
  CHECK_THROWS_WITH(
      parse_manifest(R"({"version": 1, "variants": [{"name": "a", "paged_kv": 1}]})", "x.json"),
      Catch::Contains("/variants/0/paged_kv") && Catch::Contains("expected true or false"));
}

TEST_CASE("manifest errors name the file, the JSON path and the reason", "[manifest]") {
  using Catch::Matchers::Contains;
  CHECK_THAT(error_of("{\"version\": 1,\n \"variants\": [}"), Contains("m.json: line 2") && Contains("invalid JSON"));
  CHECK_THAT(error_of("[]"), Contains("m.json: /: a manifest is a JSON object"));
  CHECK_THAT(error_of(R"({"version": 2, "variants": [{"name": "a"}]})"), Contains("m.json: /version"));
  CHECK_THAT(error_of(R"({"version": 1, "variants": []})"), Contains("/variants: expected a non-empty"));
  CHECK_THAT(error_of(R"({"version": 1, "variants": [{"mask": "true"}]})"), Contains("/variants/0/name"));
  CHECK_THAT(error_of(R"({"version": 1, "variants": [{"name": "a", "maks": "true"}]})"),
             Contains("/variants/0/maks: unknown field 'maks'"));
  CHECK_THAT(error_of(R"({"version": 1, "variants": [{"name": "a"}, {"name": "a"}]})"),
             Contains("/variants/1/name: duplicate variant name 'a'"));
  CHECK_THAT(error_of(R"({"version": 1, "dtypes": ["fp8"], "variants": [{"name": "a"}]})"),
             Contains("/dtypes/0: unknown kernel dtype 'fp8'"));
  CHECK_THAT(error_of(R"({"version": 1, "head_dims": [0], "variants": [{"name": "a"}]})"),
             Contains("/head_dims/0"));
  CHECK_THAT(error_of(R"({"version": 1, "variants": [{"name": "a", "params": ["W:bool"]}]})"),
             Contains("/variants/0/params/0"));
  CHECK_THAT(error_of(R"({"version": 1, "variants": [{"name": "a", "tensors": ["doc:int32[3]"]}]})"),
             Contains("/variants/0/tensors/0"));
  CHECK_THAT(error_of(R"({"version": 1, "variants": [{"name": "a", "mask": "q_idx >= kv_idz"}]})"),
             Contains("/variants/0/mask") && Contains("kv_idz"));
  CHECK_THAT(error_of(R"({"version": 1, "variants": [{"name": "a", "score": 3}]})"),
             Contains("/variants/0/score: expected a string"));
}

TEST_CASE("load_manifest reads a file and reports a missing one", "[manifest]") {
  attnjit::test::TempDir dir;
  const auto path = dir.path() / "m.json";
  std::ofstream(path) << R"({"version": 1, "variants": [{"name": "causal", "mask": "q_idx >= kv_idx"}]})";
  const auto manifest = load_manifest(path);
  CHECK(manifest.source == path.string());
  CHECK(manifest.variants.at(0).dtypes == std::vector<DType>{DType::bf16});
  try {
    load_manifest(dir.path() / "missing.json");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.status() == Status::io);
    CHECK_THAT(e.what(), Catch::Matchers::Contains("missing.json"));
  }
}

namespace {

// A valid manifest whose variant's "example" holds `count` empty objects in one array.
std::string manifest_with_objects(std::size_t count) {
  std::string objects;
  for (std::size_t i = 0; i < count; ++i) objects += i == 0 ? "{}" : ",{}";
  return R"({"version": 1, "variants": [{"name": "a", "example": {"x": [)" + objects + "]}}]}";
}

}  // namespace

TEST_CASE("manifest parsing is linear in the size of an array of objects", "[manifest]") {
  // Note: nlohmann's callback parser took ~10 s on this input (quadratic); the plain parser takes
  // milliseconds, so 2 s leaves room for a loaded machine and still catches the quadratic one.
  const std::string text = manifest_with_objects(300000);
  REQUIRE(text.size() < kMaxManifestBytes);
  const auto start = std::chrono::steady_clock::now();
  const Manifest manifest = parse_manifest(text, "big.json");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(manifest.variants.at(0).example["x"].size() == 300000);
  CHECK(seconds < 2.0);
}

TEST_CASE("a manifest over the size cap is refused before parsing", "[manifest]") {
  const std::string text = manifest_with_objects(kMaxManifestBytes / 3 + 1);
  REQUIRE(text.size() > kMaxManifestBytes);
  CHECK_THAT(error_of(text),
             Catch::Matchers::Contains("/: the manifest is larger than 1048576 bytes"));
  attnjit::test::TempDir dir;
  const auto path = dir.path() / "big.json";
  std::ofstream(path) << text;
  CHECK_THROWS_WITH(load_manifest(path),
                    Catch::Matchers::Contains("big.json: /: the manifest is larger than"));
}

TEST_CASE("manifest nesting is limited, counting brackets outside strings only", "[manifest]") {
  const auto nested = [](int depth) {
    return R"({"version": 1, "variants": [{"name": "a", "example": {"x": )" +
           std::string(static_cast<std::size_t>(depth), '[') +
           std::string(static_cast<std::size_t>(depth), ']') + "}}]}";
  };
  CHECK_NOTHROW(parse_manifest(nested(60), "m.json"));  // 4 levels around it: 64 in all
  CHECK_THAT(error_of(nested(61)), Catch::Matchers::Contains("nests deeper than 64"));
  CHECK_THAT(error_of(nested(100000)), Catch::Matchers::Contains("nests deeper than 64"));
  // Brackets inside strings (escaped quotes included) are text, not nesting.
  const std::string brackets_in_strings =
      R"({"version": 1, "variants": [{"name": "a", "example": {"x": ")" + std::string(200, '[') +
      R"(\"[[[[", "y": "\\"}}]})";
  CHECK_NOTHROW(parse_manifest(brackets_in_strings, "m.json"));
}
