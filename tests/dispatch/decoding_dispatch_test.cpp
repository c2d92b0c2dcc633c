// Decoding calls through the backend on the fake device: split-KV slices and their merge, the
// decoding entry, packed GQA, the switches a variant reads, the shared-memory carveout of a
// step's kernels, and decoding on sm_90a (the sm80 kernel).

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "attnjit/attnjit.h"
#include "codegen/variant_source.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "dispatch_support.hpp"
#include "gpu_harness.hpp"
#include "runtime/cuda_backend.hpp"
#include "simt_module.hpp"
#include "support/case_tables.hpp"
#include "support/scoped_env.hpp"

using namespace attnjit;
using namespace attnjit::dispatch_test;
using namespace attnjit::kernel_test;

namespace {

// How the backend should launch `c` on the fake device: the planner's answer for the kernel
// configuration of the device's arch and its SM count.
DecodingPlan expected_decoding(const KernelCase& c, const codegen::FamilyRequest family =
                                                        codegen::FamilyRequest::environment) {
  const PreparedCase prepared(c);
  const codegen::KernelConfig config = codegen::kernel_config_for(
      prepared.mask, prepared.score, c.dtype, c.head_dim,
      arch_target(nvrtc::device_arch(cuda::current_device().sm)), family);
  AttentionShape s = c.shape;
  s.head_dim = c.head_dim;
  LaunchChoices choices = launch_choices_from_environment();
  if (c.split_kv) choices.split_kv = c.split_kv;
  return plan_decoding(s, config, expressions_use_heads({prepared.mask, prepared.score}),
                       cuda::current_device().multiprocessors, choices);
}

// The last forward launch was `plan`'s for `c`: its entry, block size and grid.
void check_last_launch(const KernelCase& c, const DecodingPlan& plan) {
  REQUIRE_FALSE(device().forward_grids().empty());
  const LaunchGrid& grid = device().forward_grids().back();
  CHECK(device().forward_entries().back() ==
        (plan.decode_entry ? codegen::kDecodeEntry : codegen::kForwardEntry));
  CHECK(grid.threads == static_cast<unsigned>(32 * plan.config.num_warps));
  const int heads = plan.group > 1 ? c.shape.num_heads_kv : c.shape.num_heads_q;
  CHECK(grid.grid_y == static_cast<unsigned>(c.shape.batch * heads * plan.num_splits));
}

}  // namespace

TEST_CASE("fake device: split-KV decoding launches the slices, then the merge", "[dispatch]") {
  // The decoding table: its forced slice counts split on any device; the heuristic's cases fill
  // the fake's 4 SMs and run unsplit.
  check_through_backend(split_kv_cases());

  // One (batch, head), one query, 2048 keys: 1 block for 4 SMs, so the heuristic splits it, on
  // the decoding entry.
  KernelCase lone;
  lone.shape = shape(1, 1, 1, 1, 2048);
  lone.mask = "kv_idx % 7 != 3";
  const DecodingPlan plan = expected_decoding(lone);
  REQUIRE(plan.decode_entry);
  REQUIRE(plan.num_splits > 1);
  const int before = device().launch_count();
  const std::size_t grids = device().forward_grids().size();
  check_through_backend({lone});
  CHECK(device().launch_count() - before == 2);  // the forward kernel and the merge
  CHECK(last_launches(2) ==
        std::vector<std::string>{codegen::kDecodeEntry, overlapped(codegen::kSplitCombineEntry)});
  REQUIRE(device().forward_grids().size() == grids + 1);
  check_last_launch(lone, plan);

  // ATTNJIT_SPLIT_KV=off: one launch, one block.
  lone.split_kv = 1;
  const int unsplit = device().launch_count();
  check_through_backend({lone});
  CHECK(device().launch_count() - unsplit == 1);
  CHECK(device().forward_grids().back().grid_y == 1u);
  CHECK(device().param_info_past_end() == 0);
}

// Each of the last `count` launches as "entry carveout", oldest first.
std::vector<std::string> last_carveouts(std::size_t count) {
  const auto& all = device().launches();
  REQUIRE(all.size() >= count);
  std::vector<std::string> entries;
  for (std::size_t i = all.size() - count; i < all.size(); ++i) {
    entries.push_back(all[i].function + " " + std::to_string(all[i].carveout));
  }
  return entries;
}

TEST_CASE("fake device: a call's kernels ask for one shared-memory carveout", "[dispatch]") {
  // A split decoding step with a tensor mask: two summaries, the decoding entry (several blocks
  // per SM, so it always asks for the most shared memory), the merge.
  KernelCase step;
  step.shape = shape(1, 1, 1, 1, 2048);
  step.mask = "doc[q_idx] == doc[kv_idx]";
  step.tensors = {document_ids(2048, 3, false, 5)};
  const DecodingPlan plan = expected_decoding(step);
  REQUIRE(plan.decode_entry);
  REQUIRE(plan.num_splits > 1);
  const std::string most = std::to_string(CU_SHAREDMEM_CARVEOUT_MAX_SHARED);
  const std::string none = std::to_string(CU_SHAREDMEM_CARVEOUT_DEFAULT);
  const auto call = [&](const std::vector<std::string>& carveouts) {
    const int before = device().launch_count();
    check_through_backend({step});
    REQUIRE(device().launch_count() - before == 4);
    CHECK(last_carveouts(4) ==
          std::vector<std::string>{std::string(codegen::kSummaryEntry) + " " + carveouts[0],
                                   std::string(codegen::kSummaryEntry) + " " + carveouts[0],
                                   std::string(codegen::kDecodeEntry) + " " + most,
                                   std::string(codegen::kSplitCombineEntry) + " " + carveouts[1]});
  };
  call({most, most});
  {
    // The rule before: the one-block kernels state no preference, so the summaries and the merge
    // may run in another L1 / shared-memory split than the decoding entry between them.
    const test::ScopedEnv off("ATTNJIT_CARVEOUT", "off");
    call({none, none});
  }
  call({most, most});  // given back on the next call that asks for it

  // A prefill call on the forward entry (one block per SM): likewise.
  KernelCase prefill;
  prefill.shape = shape(1, 2, 2, 200, 200);
  prefill.mask = "q_idx >= kv_idx";
  check_through_backend({prefill});
  CHECK(last_carveouts(1) ==
        std::vector<std::string>{std::string(codegen::kForwardEntry) + " " + most});
  const test::ScopedEnv off("ATTNJIT_CARVEOUT", "off");
  check_through_backend({prefill});
  CHECK(last_carveouts(1) ==
        std::vector<std::string>{std::string(codegen::kForwardEntry) + " " + none});
}

TEST_CASE("fake device: the decoding entry runs launches of at most 32 rows", "[dispatch]") {
  const std::vector<KernelCase> cases = decode_entry_cases();
  const auto module = emulated_module(cases);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].name());
    const DecodingPlan plan = expected_decoding(cases[i]);
    CHECK(plan.decode_entry);
    device().use(module.get(), static_cast<int>(i));
    const CaseResult result = gpu_test::run_case(cases[i]);
    INFO(result.describe());
    CHECK(result.passed());
    check_last_launch(cases[i], plan);
  }
  device().use(nullptr, 0);

  // ATTNJIT_DECODE_ENTRY=off: the same call on the forward entry's blocks.
  const test::ScopedEnv off("ATTNJIT_DECODE_ENTRY", "off");
  const DecodingPlan plan = expected_decoding(cases[0]);
  CHECK_FALSE(plan.decode_entry);
  check_through_backend({cases[0]});
  check_last_launch(cases[0], plan);
}

TEST_CASE("fake device: a variant reads the decoding switches when it is created", "[dispatch]") {
  const auto cache = work_dir("switches-cache");
  const test::ScopedEnv cache_dir("ATTNJIT_CACHE_DIR", cache.c_str());
  attnjit_runtime* runtime = cuda_runtime();
  KernelCase step;
  step.shape = shape(1, 2, 2, 3, 300);
  const auto module = emulated_module({step});
  device().use(module.get(), 0);
  const auto last_entry = [] { return device().forward_entries().back(); };

  // Created before the switch: its calls keep the decoding entry.
  attnjit_variant* before = maskless_c_variant(runtime, step);
  attnjit_variant* after = nullptr;
  {
    const test::ScopedEnv off("ATTNJIT_DECODE_ENTRY", "off");
    CHECK(run_variant_through_c_api(before, step).passed());
    CHECK(last_entry() == codegen::kDecodeEntry);
    after = maskless_c_variant(runtime, step);
  }
  // Created under it: the forward entry, also once the switch is gone.
  CHECK(run_variant_through_c_api(after, step).passed());
  CHECK(last_entry() == codegen::kForwardEntry);
  attnjit_variant_destroy(after);
  {
    // A bad value is refused when the variant is created, naming the variable.
    const test::ScopedEnv bad("ATTNJIT_SPLIT_KV", "many");
    attnjit_variant_desc desc;
    attnjit_variant_desc_init(&desc);
    attnjit_variant* refused = nullptr;
    CHECK(attnjit_variant_create(&refused, runtime, &desc) == ATTNJIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(attnjit_last_error(), Catch::Contains("ATTNJIT_SPLIT_KV must be auto, off"));
    CHECK(refused == nullptr);
  }
  attnjit_variant_destroy(before);
  device().use(nullptr, 0);
  attnjit_runtime_destroy(runtime);
  std::error_code ignored;
  std::filesystem::remove_all(cache, ignored);
}

TEST_CASE("fake device: packed GQA decoding through the backend", "[dispatch]") {
  const std::vector<KernelCase> cases = gqa_decoding_cases();
  const std::size_t grids = device().forward_grids().size();
  check_through_backend(cases);
  REQUIRE(device().forward_grids().size() == grids + cases.size());
  // The first case (2 x 8 query heads over 2, causal over the cache) packs 4 heads per block:
  // B * Hkv = 4 block rows of the decoding entry, split as the planner says for the fake's SMs.
  const DecodingPlan plan = expected_decoding(cases[0]);
  CHECK(plan.group == 4);
  CHECK(plan.decode_entry);
  CHECK(device().forward_grids()[grids].grid_y == static_cast<unsigned>(4 * plan.num_splits));
  CHECK(device().forward_grids()[grids].grid_x == 1u);
  CHECK(device().forward_entries()[grids] == codegen::kDecodeEntry);

  // ATTNJIT_PACK_GQA=off: a block row per query head, 16 of them (times the slices).
  const test::ScopedEnv off("ATTNJIT_PACK_GQA", "off");
  const DecodingPlan unpacked = expected_decoding(cases[0]);
  CHECK(unpacked.group == 1);
  check_through_backend({cases[0]});
  check_last_launch(cases[0], unpacked);
}

TEST_CASE("fake device: a decoding call on sm_90a runs split on the sm80 kernel",
          "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const Sm90CudaRuntime sm90("sm90-decode-cache");
  attnjit_runtime* runtime = sm90.runtime;

  // The launches must be the sm80 kernel's (FwdParams, then the merge): the emulated module
  // holds that source. Were the call sent to the sm90 kernel, its launch would not fit it.
  KernelCase decode;
  decode.shape = shape(1, 2, 1, 1, 4096);
  const PreparedCase prepared(decode);
  const auto module = std::make_unique<simt::SimtModule>(
      std::vector<std::string>{codegen::generate_kernel_source(
                                   prepared.mask, prepared.score, decode.dtype, decode.head_dim,
                                   codegen::Target(90, true), codegen::FamilyRequest::sm80)
                                   .source},
      work_dir("sm90-decode-module"));
  device().use(module.get(), 0);
  const int before = device().launch_count();
  const CaseResult result = run_through_c_api(runtime, decode);
  INFO(result.describe());
  CHECK(result.passed());
  CHECK(device().launch_count() - before == 2);
  // The 2 query heads packed into one block row of the sm80 kernel's decoding entry, split for
  // the fake's 4 SMs.
  const DecodingPlan plan = expected_decoding(decode, codegen::FamilyRequest::sm80);
  CHECK(plan.group == 2);
  CHECK(plan.num_splits > 1);
  check_last_launch(decode, plan);
  device().use(nullptr, 0);
}
