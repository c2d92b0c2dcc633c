#include "jit/prewarm.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "../cache/cache_test_support.hpp"
#include "common/error.hpp"
#include "support/scoped_env.hpp"

using namespace attnjit;
namespace fs = std::filesystem;

namespace {

// One kernel that compiles (causal, bf16, d64) and one that parses but cannot be built (d48).
std::vector<NamedVariantSpec> two_variants() {
  const Manifest manifest = parse_manifest(R"({"version": 1, "dtypes": ["bf16"],
      "variants": [{"name": "causal", "mask": "q_idx >= kv_idx", "head_dims": [64]},
                   {"name": "odd", "head_dims": [48]}]})",
                                           "two.json");
  return expand_manifest(manifest);
}

}  // namespace

TEST_CASE("prewarm_jobs gives every variant for every arch, variant first", "[prewarm]") {
  const auto variants = two_variants();
  const auto jobs = prewarm_jobs(variants, {"sm_80", "sm_90"});
  REQUIRE(jobs.size() == 4);
  CHECK(jobs[0].variant == &variants[0]);
  CHECK(jobs[0].arch == "sm_80");
  CHECK(jobs[1].variant == &variants[0]);
  CHECK(jobs[1].arch == "sm_90");
  CHECK(jobs[2].variant == &variants[1]);
}

TEST_CASE("prewarm reports each job once, a failure as an outcome with its status", "[prewarm]") {
  test::TempDir dir;
  KernelCache cache{dir.path()};
  const auto variants = two_variants();
  const auto jobs = prewarm_jobs(variants, {"sm_80"});
  require_storable(cache, {"sm_80"});
  std::multiset<std::size_t> reported;
  const auto outcomes = prewarm(
      jobs, cache, 4, [&](std::size_t index, const PrewarmOutcome&) { reported.insert(index); });
  CHECK(reported == std::multiset<std::size_t>{0, 1});
  REQUIRE(outcomes.size() == 2);
  CHECK_FALSE(outcomes[0].failed);
  CHECK(outcomes[0].status == Status::ok);
  CHECK(outcomes[0].origin == KernelOrigin::compiled);
  CHECK(outcomes[1].failed);
  CHECK(outcomes[1].status == Status::unsupported);
  CHECK_THAT(outcomes[1].error, Catch::Contains("48"));

  // A fresh cache on the same root finds the kernel on disk.
  KernelCache again{dir.path()};
  const auto second = prewarm({jobs[0]}, again, 1);
  REQUIRE(second.size() == 1);
  CHECK(second[0].origin == KernelOrigin::disk);
}

TEST_CASE("require_storable refuses a root that cannot hold kernels", "[prewarm]") {
  test::TempDir dir;
  const fs::path file = dir.path() / "a-file";
  std::ofstream(file) << "x";
  KernelCache cache{file};
  CHECK_THROWS_AS(require_storable(cache, {"sm_80"}), Error);
}

TEST_CASE("why_unwritable names a file in the way, and nothing for a writable directory",
          "[prewarm]") {
  test::TempDir dir;
  CHECK(why_unwritable(dir.path() / "not" / "yet").empty());
  const fs::path file = dir.path() / "a-file";
  std::ofstream(file) << "x";
  CHECK_THAT(why_unwritable(file / "sub"), Catch::Contains("is not a directory"));
}

namespace {

// What a cache root holds for `arch`: its cubins, and the family of each paged kernel among them.
struct StoredKernels {
  int cubins = 0;
  std::multiset<std::string> paged_families;
  int split = 0;        // sm90 split kernels, dense
  int paged_split = 0;  // and paged
};
StoredKernels stored_kernels(const fs::path& root, const std::string& arch) {
  StoredKernels stored;
  for (const auto& entry : fs::recursive_directory_iterator(root / "v1" / arch)) {
    if (entry.path().extension() == ".cubin") ++stored.cubins;
    if (entry.path().extension() != ".json") continue;
    std::ifstream file(entry.path());
    const nlohmann::json sidecar = nlohmann::json::parse(file, nullptr, false);
    if (sidecar.is_discarded() || !sidecar.contains("config")) continue;
    const bool paged = sidecar["config"].value("paged_kv", false);
    const bool split = sidecar["config"].value("split_kv", false);
    if (split) ++(paged ? stored.paged_split : stored.split);
    if (paged && !split) {
      stored.paged_families.insert(sidecar["config"].value("family", std::string("sm80")));
    }
  }
  return stored;
}

}  // namespace

TEST_CASE(
    "prewarm of a variant the sm90 kernel serves stores its sm80, split and short-rows "
    "kernels too",
    "[prewarm]") {
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "sm90");
  test::TempDir dir;
  KernelCache cache{dir.path()};
  const auto variants = two_variants();
  const auto all = prewarm_jobs(variants, {"sm_90a", "sm_80"});
  const std::vector<PrewarmJob> jobs = {all[0], all[1]};  // causal on each arch
  require_storable(cache, {"sm_90a", "sm_80"});
  const auto outcomes = prewarm(jobs, cache, 1);
  REQUIRE(outcomes.size() == 2);
  CHECK_FALSE(outcomes[0].failed);
  CHECK_FALSE(outcomes[1].failed);
  const auto cubins = [&](const char* arch) {
    int count = 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir.path() / "v1" / arch)) {
      if (entry.path().extension() == ".cubin") ++count;
    }
    return count;
  };
  // sm_90a: the sm90 kernel, the sm80 kernel that decoding steps run on, the sm90 split kernel
  // (calls of too few query tiles) and the short-rows kernel (a masked head-dim-64 variant:
  // codegen/short_rows.hpp); sm_80: one.
  CHECK(cubins("sm_90a") == 4);
  CHECK(cubins("sm_80") == 1);
  CHECK(stored_kernels(dir.path(), "sm_90a").split == 1);

  // Both are found on disk the next time: nothing is compiled.
  KernelCache again{dir.path()};
  const auto second = prewarm({jobs[0]}, again, 1);
  REQUIRE(second.size() == 1);
  CHECK(second[0].origin == KernelOrigin::disk);
}

namespace {

// Prewarms noop at head dim 64 (bf16) from a manifest that says its calls read paged caches,
// for `arch` with ATTNJIT_KERNEL_FAMILY=`family`, into a fresh root; what it stored.
StoredKernels prewarm_paged_noop(const char* family, const std::string& arch) {
  const test::ScopedEnv family_env("ATTNJIT_KERNEL_FAMILY", family);
  test::TempDir dir;
  KernelCache cache{dir.path()};
  const auto variants = expand_manifest(parse_manifest(R"({"version": 1, "dtypes": ["bf16"],
      "paged_kv": true, "variants": [{"name": "noop", "head_dims": [64]}]})",
                                                       "paged.json"));
  const auto jobs = prewarm_jobs(variants, {arch});
  require_storable(cache, {arch});
  const auto outcomes = prewarm(jobs, cache, 1);
  REQUIRE(outcomes.size() == 1);
  INFO(outcomes[0].error);
  CHECK_FALSE(outcomes[0].failed);
  return stored_kernels(dir.path(), arch);
}

}  // namespace

// A manifest that says its calls read paged caches gets the paged kernel (the sm80 family's, on
// every arch) prewarmed beside the variant's own.
TEST_CASE("prewarm of a variant with paged_kv stores its paged kernel too", "[prewarm]") {
  const StoredKernels stored = prewarm_paged_noop("sm80", "sm_80");
  CHECK(stored.cubins == 2);  // the variant's kernel and its paged kernel
  CHECK(stored.paged_families == std::multiset<std::string>{"sm80"});
}

// On sm_90a, where the variant's kernel is the sm90 kernel, both paged kernels: the sm90
// family's (prefills) and the sm80 family's (decoding steps, pages under 8 rows).
// And the sm90 split kernels of dense and paged calls.
TEST_CASE("prewarm of a variant with paged_kv for sm_90a stores both families' paged kernels",
          "[prewarm]") {
  const StoredKernels stored = prewarm_paged_noop("auto", "sm_90a");
  CHECK(stored.paged_families == std::multiset<std::string>{"sm80", "sm90"});
  CHECK(stored.split == 1);
  CHECK(stored.paged_split == 1);
}
