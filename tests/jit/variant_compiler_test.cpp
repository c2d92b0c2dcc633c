#include "jit/variant_compiler.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "../cache/store_test_entries.hpp"
#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/manifest.hpp"

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
