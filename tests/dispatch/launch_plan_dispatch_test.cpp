// attnjit_variant_launch_plan on the fake sm_90a device: the kernel a call runs, and why.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "attnjit/attnjit.h"
#include "codegen/variant_source.hpp"
#include "dispatch_support.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_memory.hpp"
#include "support/case_tables.hpp"
#include "support/scoped_env.hpp"

using namespace attnjit;
using namespace attnjit::dispatch_test;
using namespace attnjit::kernel_test;

TEST_CASE("fake device: a call's launch plan names the kernel that runs it and why",
          "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const Sm90CudaRuntime sm90("launch-plan-cache");
  attnjit_runtime* runtime = sm90.runtime;
  // Plans only: that forward launches what the plan says is run_variant_through_c_api's check,
  // made on every case that goes through it (the short-rows ones above among them).
  const auto plan_of = [&](const KernelCase& c) {
    attnjit_variant* variant = c_variant(runtime, c);
    const DeviceCall call(c);
    const attnjit_launch_plan plan = launch_plan(variant, call.args);
    attnjit_variant_destroy(variant);
    return plan;
  };
  using Catch::Contains;
  using Catch::StartsWith;

  KernelCase window;
  window.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  window.params = {"W:int"};
  window.scalars = {64};
  window.head_dim = 64;
  window.shape = shape(1, 4, 2, 512, 512);
  attnjit_launch_plan plan = plan_of(window);
  INFO(plan.reason);
  CHECK(plan.backend == ATTNJIT_BACKEND_CUDA);
  CHECK(std::string(plan.kernel_family) == "sm90");
  CHECK(std::string(plan.kernel) == "short_rows");
  CHECK(std::string(plan.entry) == codegen::kForwardEntry);
  CHECK(plan.block_n == 64);
  CHECK(plan.blocks_per_sm == 2);
  CHECK(plan.grid_x == 4u);  // 512 rows in 128-row blocks
  CHECK(plan.grid_y == 4u);
  CHECK(plan.num_splits == 1);
  CHECK(plan.split_tiles == 0);
  CHECK(plan.gqa_group == 1);
  CHECK_THAT(plan.reason, StartsWith("short rows (") && Contains("sampled query tiles"));

  // Too few blocks for the rule: 4 on the fake's 4 SMs.
  KernelCase lone = window;
  lone.shape = shape(1, 1, 1, 512, 512);
  plan = plan_of(lone);
  CHECK(std::string(plan.kernel) == "standard");
  CHECK(plan.blocks_per_sm == 1);
  CHECK_THAT(plan.reason, StartsWith("the variant's kernel for sm_90a; too few blocks for two per "
                                     "SM (4 blocks on 4 SMs"));

  // Long rows: a causal mask keeps 16 of 32 key tiles a query tile on average at 4096.
  KernelCase causal = window;
  causal.mask = "q_idx >= kv_idx + W";
  causal.scalars = {0};
  causal.shape = shape(1, 4, 4, 4096, 4096);
  plan = plan_of(causal);
  CHECK(std::string(plan.kernel) == "standard");
  CHECK_THAT(plan.reason, Contains("; long rows (over ") && Contains(" kept key tiles in "));

  {
    const test::ScopedEnv off("ATTNJIT_SHORT_ROWS", "off");
    plan = plan_of(window);
    CHECK(std::string(plan.kernel) == "standard");
    CHECK_THAT(plan.reason, Contains("not the short-rows kernel: ATTNJIT_SHORT_ROWS=off"));
  }

  // A decoding step of 8 query heads over 2: the sm80 kernel's decoding entry, 4 heads packed
  // into a block's rows, the keys split for the fake's 4 SMs.
  KernelCase decode;
  decode.mask = "q_idx >= kv_idx";
  decode.head_dim = 128;
  decode.shape = shape(1, 8, 2, 1, 2048);
  plan = plan_of(decode);
  CHECK(std::string(plan.kernel_family) == "sm80");
  CHECK(std::string(plan.kernel) == "decoding");
  CHECK(std::string(plan.entry) == codegen::kDecodeEntry);
  CHECK(plan.gqa_group == 4);
  CHECK(plan.num_splits > 1);
  CHECK(plan.split_tiles > 0);
  CHECK(plan.grid_y == static_cast<unsigned>(2 * plan.num_splits));
  CHECK(plan.scratch_bytes > 0);
  CHECK_THAT(plan.reason, StartsWith("a decoding call") &&
                              Contains("4 query heads packed into each block's rows") &&
                              Contains(fmt::format("split in {} slices", plan.num_splits)));

  // A speculative step of 16 queries of the same heads: 64 packed rows, two 32-row blocks per
  // key/value head on the decoding entry.
  KernelCase draft = decode;
  draft.mask = "kv_idx <= q_idx + kv_len - q_len";
  draft.shape = shape(1, 8, 2, 16, 2048);
  plan = plan_of(draft);
  CHECK(std::string(plan.entry) == codegen::kDecodeEntry);
  CHECK(plan.gqa_group == 4);
  CHECK(plan.grid_x == 2u);
  CHECK(plan.grid_y == static_cast<unsigned>(2 * plan.num_splits));
  CHECK_THAT(plan.reason,
             Contains("4 query heads x 16 queries packed into the rows of 2 block(s) per "
                      "key/value head"));
  // 20 queries: 80 packed rows, past the decoding entry's two blocks: one 128-row block per
  // key/value head of the sm90 split kernel.
  KernelCase tree = draft;
  tree.shape = shape(1, 8, 2, 20, 2048);
  plan = plan_of(tree);
  CHECK(std::string(plan.kernel_family) == "sm90");
  CHECK(std::string(plan.kernel) == "split_kv");
  CHECK(std::string(plan.entry) == codegen::kForwardEntry);
  CHECK(plan.gqa_group == 4);
  CHECK(plan.grid_x == 1u);
  CHECK_THAT(plan.reason, StartsWith("a few queries of 4 query heads per key/value head: the "
                                     "sm90 split kernel packs") &&
                              Contains("4 query heads x 20 queries packed into the rows of 1 "
                                       "block(s) per key/value head"));

  // A query 8 bytes off 16: TMA cannot load it, the sm80 kernel's checks take the call.
  {
    attnjit_variant* variant = c_variant(runtime, window);
    DeviceCall call(window);
    call.args.q = static_cast<const char*>(call.args.q) + 8;
    plan = launch_plan(variant, call.args);
    CHECK(std::string(plan.kernel_family) == "sm80");
    CHECK(std::string(plan.kernel) == "tma_fallback");
    CHECK_THAT(plan.reason, StartsWith("the sm90 kernel cannot load this call with TMA ("));
    // A call forward would refuse gets no plan, and the caller's struct is left as it was.
    attnjit_launch_plan untouched;
    attnjit_launch_plan_init(&untouched);
    call.args.q_len = 0;
    CHECK(attnjit_variant_launch_plan(&untouched, variant, &call.args) ==
          ATTNJIT_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(untouched.kernel).empty());
    attnjit_variant_destroy(variant);
  }

  // A document mask: two summary launches (doc at q_idx and at kv_idx) before the forward one.
  {
    const attnjit_tensor_decl doc{"doc", ATTNJIT_TENSOR_INT32, 1};
    attnjit_variant_desc desc;
    attnjit_variant_desc_init(&desc);
    desc.mask = "doc[q_idx] == doc[kv_idx]";
    desc.tensors = &doc;
    desc.num_tensors = 1;
    desc.head_dim = 64;
    attnjit_variant* variant = nullptr;
    REQUIRE(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_OK);
    KernelCase plain;
    plain.shape = shape(1, 2, 2, 300, 300);
    DeviceCall call(plain);
    cuda::DeviceBuffer ids(300 * sizeof(int));
    const attnjit_tensor_arg tensor{ids.get(), {300, 1}};
    call.args.tensors = &tensor;
    call.args.num_tensors = 1;
    plan = launch_plan(variant, call.args);
    CHECK(std::string(plan.kernel) == "standard");
    CHECK(plan.summary_launches == 2);
    CHECK(plan.scratch_bytes > 0);
    attnjit_variant_destroy(variant);
  }
}
