#include "jit/variant_compiler.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../cache/store_test_entries.hpp"
#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/manifest.hpp"
#include "jit/spill_policy.hpp"
#include "support/scoped_env.hpp"

using namespace attnjit;
using attnjit::test::slurp;
using attnjit::test::TempDir;

namespace {

VariantSpec causal() {
  VariantSpec spec;
  spec.mask = "q_idx >= kv_idx";
  spec.dtype = DType::bf16;
  spec.head_dim = 64;
  return spec;
}

}  // namespace

TEST_CASE("compile_variant compiles, then finds the kernel in memory and on disk", "[jit]") {
  TempDir dir;
  KernelBinary first;
  {
    KernelCache cache(dir.path());
    first = compile_variant(causal(), "sm_80", cache);
    CHECK(first.origin == KernelOrigin::compiled);
    CHECK(first.arch == "sm_80");
    CHECK(first.forward_resources().registers > 0);
    CHECK(first.config.block_m > 0);
    CHECK(first.key == variant_cache_key(causal(), "sm_80"));
    CHECK_FALSE(first.path.empty());
    CHECK(compile_variant(causal(), "sm_80", cache).origin == KernelOrigin::memory);
    const auto a = acquire_variant(causal(), "sm_80", cache);
    const auto b = acquire_variant(causal(), "sm_80", cache);
    CHECK(a.origin == KernelOrigin::memory);
    CHECK(a.binary == b.binary);
  }
  KernelCache fresh(dir.path());
  const KernelBinary again = compile_variant(causal(), "sm_80", fresh);
  CHECK(again.origin == KernelOrigin::disk);
  CHECK(again.image == first.image);
  CHECK(again.forward_resources().registers == first.forward_resources().registers);
  CHECK(again.config.block_m == first.config.block_m);
  // Every entry of the sm80 module, as compiled: forward, decoding, tensor summary, merge.
  for (const char* name : {codegen::kForwardEntry, codegen::kDecodeEntry, codegen::kSummaryEntry,
                           codegen::kSplitCombineEntry}) {
    INFO(name);
    REQUIRE(first.entry_resources.count(name) == 1);
    REQUIRE(again.entry_resources.count(name) == 1);
    CHECK(again.entry_resources.at(name).registers > 0);
    CHECK(again.entry_resources.at(name).registers == first.entry_resources.at(name).registers);
  }

  const auto entry = variant_cache_entry(causal(), "sm_80", fresh);
  CHECK(entry.binary == first.path);
  const auto sidecar =
      nlohmann::json::parse(slurp(std::filesystem::path(entry.binary).replace_extension(".json")));
  CHECK(sidecar["variant"]["mask"] == "q_idx >= kv_idx");
  CHECK(sidecar["variant"]["mask_index_only"] == true);
  CHECK(sidecar["variant"]["dtype"] == "bf16");
  CHECK(sidecar["variant"]["head_dim"] == 64);
  CHECK(sidecar["resources"].contains(codegen::kForwardEntry));
}

TEST_CASE("a variant parsed once compiles from its parsed expressions", "[jit]") {
  TempDir dir;
  KernelCache cache(dir.path());
  const VariantSpec spec = causal();
  const ParsedVariant parsed = parse_variant(spec);
  CHECK(parsed.mask.canonical() == "(q_idx >= kv_idx)");
  CHECK(parsed.score.is_identity());
  const VariantKernel kernel = acquire_variant(spec, parsed, "sm_80", cache);
  CHECK(kernel.origin == KernelOrigin::compiled);
  CHECK(kernel.binary->key == variant_cache_key(spec, "sm_80"));
  // One request, whichever way it is made.
  CHECK(acquire_variant(spec, "sm_80", cache).binary == kernel.binary);
  CHECK(acquire_variant(spec, parsed, "sm_80", cache).origin == KernelOrigin::memory);
}

TEST_CASE("compile_variant keys differ by dtype, head dim, arch and PTX", "[jit]") {
  auto fp16 = causal();
  fp16.dtype = DType::fp16;
  auto d128 = causal();
  d128.head_dim = 128;
  const std::string key = variant_cache_key(causal(), "sm_90");
  CHECK(variant_cache_key(fp16, "sm_90") != key);
  CHECK(variant_cache_key(d128, "sm_90") != key);
  CHECK(variant_cache_key(causal(), "sm_86") != key);
  CHECK(variant_cache_key(causal(), "sm_90", true) != key);
  CHECK(variant_cache_key(causal(), "sm_90") == key);
}

TEST_CASE("compile_variant emits PTX on request", "[jit]") {
  TempDir dir;
  KernelCache cache(dir.path());
  const KernelBinary binary = compile_variant(causal(), "sm_90", cache, true);
  CHECK(binary.is_ptx);
  const std::string ptx(binary.image.begin(), binary.image.end());
  CHECK(ptx.find(".entry attnjit_fwd") != std::string::npos);
  CHECK(binary.path.ends_with(".ptx"));
}

TEST_CASE("compile_variant reports bad expressions and arches before compiling", "[jit]") {
  TempDir dir;
  KernelCache cache(dir.path());
  auto bad = causal();
  bad.mask = "q_idx >= kv_idz";
  try {
    compile_variant(bad, "sm_90", cache);
    FAIL("expected a parse error");
  } catch (const Error& e) {
    CHECK(e.status() == Status::parse);
  }
  try {
    compile_variant(causal(), "sm_75", cache);
    FAIL("expected an arch error");
  } catch (const Error& e) {
    CHECK(e.status() == Status::unsupported);
  }
}

TEST_CASE("a variant's name is recorded in the sidecar and is not part of the key", "[jit]") {
  TempDir dir;
  KernelCache cache(dir.path());
  VariantSpec named = causal();
  named.name = "causal";
  CHECK(variant_cache_key(named, "sm_80") == variant_cache_key(causal(), "sm_80"));
  const KernelBinary binary = compile_variant(named, "sm_80", cache);
  const auto sidecar = nlohmann::json::parse(
      slurp(std::filesystem::path(binary.path).replace_extension(".json")));
  CHECK(sidecar["variant"]["name"] == "causal");
  // The manifest names every spec it expands.
  for (const NamedVariantSpec& spec : expand_manifest(standard_manifest())) {
    CHECK(spec.spec.name == spec.name);
  }
}

TEST_CASE("a variant's cache files are named for what it is: <dtype>-d<head dim>-<key>", "[jit]") {
  TempDir dir;
  KernelCache cache(dir.path());
  VariantSpec spec = causal();
  spec.dtype = DType::fp16;
  spec.head_dim = 128;
  const auto entry = variant_cache_entry(spec, "sm_90", cache);
  CHECK(entry.key == variant_cache_key(spec, "sm_90"));
  CHECK(entry.binary == dir.path() / "v1" / "sm_90" / ("cuda-" + nvrtc::nvrtc_version()) /
                            ("fp16-d128-" + entry.key + ".cubin"));
  CHECK(variant_cache_entry(spec, "sm_90", cache, true).binary.filename().string() ==
        "fp16-d128-" + variant_cache_key(spec, "sm_90", true) + ".ptx");
}

TEST_CASE("a stored kernel's configuration comes from its variant, never from the sidecar",
          "[jit]") {
  TempDir dir;
  const KernelBinary stored = [&] {
    KernelCache cache(dir.path());
    return compile_variant(causal(), "sm_80", cache);
  }();
  const std::filesystem::path sidecar =
      std::filesystem::path(stored.path).replace_extension(".json");
  // A launch with too little shared memory, in a sidecar that is otherwise whole.
  test::edit_sidecar(sidecar, [](nlohmann::json& json) { json["config"]["smem_bytes"] = 1; });

  KernelCache fresh(dir.path());
  const KernelBinary again = compile_variant(causal(), "sm_80", fresh);
  CHECK(again.origin == KernelOrigin::compiled);
  CHECK(again.config.smem_bytes == stored.config.smem_bytes);
  CHECK(again.config.smem_bytes > 1);
}

TEST_CASE("a change of ATTNJIT_TUNE within the process is a new request, not the earlier kernel",
          "[jit]") {
  TempDir dir;
  KernelCache cache(dir.path());
  const VariantSpec spec = causal();
  const ParsedVariant parsed = parse_variant(spec);
  const auto sm90 = [&] {
    return acquire_variant(spec, parsed, "sm_90a", cache, false, codegen::FamilyRequest::sm90);
  };
  ::unsetenv("ATTNJIT_TUNE");
  const VariantKernel plain = sm90();
  ::setenv("ATTNJIT_TUNE", "sm90_persistent=1", 1);
  const VariantKernel persistent = sm90();
  const VariantKernel again = sm90();
  ::unsetenv("ATTNJIT_TUNE");
  CHECK_FALSE(plain.binary->config.persistent);
  CHECK(persistent.origin == KernelOrigin::compiled);
  CHECK(persistent.binary->config.persistent);
  CHECK(again.origin == KernelOrigin::memory);
  CHECK(sm90().binary == plain.binary);
}

// A score heavier than the standard ones can make the sm90 kernel's wide default tiles (128 x 176
// at head dim 128 without a mask) spill hundreds of bytes; such a variant is served with the base
// tiles, which it fits, by every path that names its kernel: a request (cubin or PTX), a later
// process reading the cache, the source inspect shows. The wide kernel stays stored, so that a
// later process decides from its report without compiling. Explicit tiles are served as asked,
// and a standard score keeps the wide tiles.
TEST_CASE("an sm90 kernel whose wide default tiles spill heavily is served with the base tiles",
          "[jit][sm90]") {
  TempDir dir;
  const test::ScopedEnv tuning("ATTNJIT_TUNE", nullptr);
  VariantSpec spec;
  spec.score = "score / (1 + exp(-score))";
  spec.head_dim = 128;
  const std::string arch = "sm_90a";
  std::string served_key;
  {
    KernelCache cache(dir.path());
    const VariantKernel kernel = acquire_variant(spec, arch, cache);
    CHECK(kernel.origin == KernelOrigin::compiled);
    const codegen::KernelConfig& config = kernel.binary->config;
    CHECK(config.family == codegen::KernelFamily::sm90);
    CHECK(config.block_m == 128);
    CHECK(config.block_n == 128);
    CHECK(kernel.binary->forward_resources().spill_store_bytes == 0);
    CHECK(kernel.binary->forward_resources().spill_load_bytes == 0);
    served_key = kernel.binary->key;

    // The default tiles' kernel: stored, wide, spilling.
    const VariantCacheEntry wide = variant_cache_entry(spec, arch, cache);
    CHECK(wide.key != served_key);
    CHECK(std::filesystem::exists(wide.binary));
    CHECK(generate_variant_source(spec, arch).config.block_n == 176);
    const auto sidecar =
        nlohmann::json::parse(slurp(std::filesystem::path(wide.binary).replace_extension(".json")));
    CHECK(sidecar["resources"][codegen::kForwardEntry]["spill_store_bytes"].get<int>() >= 64);

    const ServedVariantSource served = served_variant_source(spec, arch, cache);
    CHECK(served.generated.config.block_n == 128);
    CHECK(served.wide_block_m == 128);
    CHECK(served.wide_block_n == 176);
    CHECK(served.wide_spill_bytes >= 64);
    CHECK(variant_cache_entry(spec, served.generated, arch, cache).key == served_key);
    CHECK(acquire_variant(spec, arch, cache, /*ptx=*/true).binary->config.block_n == 128);
  }
  KernelCache fresh(dir.path());
  const VariantKernel again = acquire_variant(spec, arch, fresh);
  CHECK(again.origin == KernelOrigin::disk);
  CHECK(again.binary->key == served_key);

  const test::ScopedEnv wide_tiles("ATTNJIT_TUNE", "sm90_block_n=176");
  const VariantKernel asked = acquire_variant(spec, arch, fresh);
  CHECK(asked.binary->config.block_n == 176);
  CHECK(asked.binary->forward_resources().spill_store_bytes > 0);
}

TEST_CASE("a standard score keeps the sm90 kernel's wide default tiles", "[jit][sm90]") {
  TempDir dir;
  KernelCache cache(dir.path());
  const test::ScopedEnv tuning("ATTNJIT_TUNE", nullptr);
  VariantSpec spec;
  spec.score = "cap * tanh(score / cap)";
  spec.signature.params.push_back(expr::parse_param_decl("cap:float"));
  spec.head_dim = 128;
  const VariantKernel kernel = acquire_variant(spec, "sm_90a", cache);
  CHECK(kernel.binary->config.block_n == 176);
  const ServedVariantSource served = served_variant_source(spec, "sm_90a", cache);
  CHECK(served.generated.config.block_n == 176);
  CHECK(served.wide_spill_bytes == 0);
  CHECK(served.wide_block_n == 0);
}

namespace {

// Scores heavier than the standard ones, each of whose sm90 kernel spilled 200-650 bytes at the
// wide default tiles of head dim 64 or 128 (NVRTC 13.0): served, none spills heavily.
void check_heavy_scores_served_without_heavy_spills(int head_dim) {
  TempDir dir;
  KernelCache cache(dir.path());
  const test::ScopedEnv tuning("ATTNJIT_TUNE", nullptr);
  const std::pair<const char*, std::vector<const char*>> scores[] = {
      {"score / (1 + exp(-score))", {}},
      {"cap * tanh(score / cap) * sigmoid(score)", {"cap:float"}},
      {"cap * tanh(score / cap) + slope * (kv_idx - q_idx)", {"cap:float", "slope:float"}},
      {"score + exp(-abs(q_idx - kv_idx) / tau)", {"tau:float"}}};
  for (const auto& [score, params] : scores) {
    VariantSpec spec;
    spec.score = score;
    for (const char* param : params) {
      spec.signature.params.push_back(expr::parse_param_decl(param));
    }
    spec.head_dim = head_dim;
    const VariantKernel kernel = acquire_variant(spec, "sm_90a", cache);
    const ResourceUsage& usage = kernel.binary->forward_resources();
    INFO(score << " at head dim " << head_dim << ": " << kernel.binary->config.block_m << " x "
               << kernel.binary->config.block_n << ", " << usage.spill_store_bytes << " / "
               << usage.spill_load_bytes << " bytes spilled");
    CHECK(usage.spill_store_bytes + usage.spill_load_bytes < 64);
  }
}

}  // namespace

TEST_CASE("heavy scores are served without heavy spills, head dim 64", "[jit][sm90]") {
  check_heavy_scores_served_without_heavy_spills(64);
}
TEST_CASE("heavy scores are served without heavy spills, head dim 128", "[jit][sm90]") {
  check_heavy_scores_served_without_heavy_spills(128);
}
TEST_CASE("heavy scores are served without heavy spills, head dim 256", "[jit][sm90]") {
  check_heavy_scores_served_without_heavy_spills(256);
}

// The rule itself, on reports no compile gives on demand: a few bytes stay on the wide tiles; a
// heavy spill moves to the masked tiles only where their kernel spills less.
TEST_CASE("the masked tiles serve only a heavily spilling wide kernel, and only if they spill less",
          "[jit]") {
  CHECK(spilled_bytes(ResourceUsage{168, 0, 0, 12, 40}) == 52);
  CHECK_FALSE(prefer_base_tiles(0, 0));
  CHECK_FALSE(prefer_base_tiles(52, 0));  // score * sigmoid(score), D=128
  CHECK_FALSE(prefer_base_tiles(kHeavySpillBytes - 1, 0));
  CHECK(prefer_base_tiles(kHeavySpillBytes, 0));
  CHECK(prefer_base_tiles(644, 0));  // the SiLU score, D=128
  CHECK(prefer_base_tiles(644, 16));
  CHECK_FALSE(prefer_base_tiles(644, 644));  // no better: the wide tiles stay
  CHECK_FALSE(prefer_base_tiles(200, 400));
}
