// The sm90 kernel through the backend on the fake sm_90a device: the C API, masks, scores and
// tensor summaries, the persistent schedule, the mbarrier watchdog, the calls TMA cannot load
// (the sm80 kernel instead) and the short-rows kernel.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "attnjit/attnjit.h"
#include "attnjit/sm90_timeline.cuh"
#include "attnjit/sm90_watchdog_record.cuh"
#include "codegen/kernel_tuning.hpp"
#include "codegen/short_rows.hpp"
#include "codegen/variant_source.hpp"
#include "common/error.hpp"
#include "dispatch_support.hpp"
#include "driver/watchdog_record.hpp"
#include "gpu_harness.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/variant_compiler.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_memory.hpp"
#include "runtime/forward_plan.hpp"
#include "runtime/runtime.hpp"
#include "runtime/variant.hpp"
#include "simt_module.hpp"
#include "support/capture_error.hpp"
#include "support/case_tables.hpp"
#include "support/log_capture.hpp"
#include "support/scoped_env.hpp"

using namespace attnjit;
using namespace attnjit::dispatch_test;
using namespace attnjit::kernel_test;

namespace {

// Case `c` on the fake device with its sm90 split kernel (generated as the runtime generates it:
// dense, or of paged calls) as the emulated module, and a variant of it created with c.split_kv
// forced (a variant reads ATTNJIT_SPLIT_KV when it is created).
class SplitKernelCase {
 public:
  SplitKernelCase(attnjit_runtime* runtime, const KernelCase& c, const char* module_dir)
      : prepared_(c),
        kernel_(codegen::generate_split_kernel_source(
            prepared_.mask, prepared_.score, c.dtype, c.head_dim, codegen::Target(90, true),
            c.page_size > 0 || c.sequences.has_value(), codegen::KernelTuning{})),
        module_({kernel_.source}, work_dir(module_dir)) {
    device().use(&module_, 0);
    const std::string forced = c.split_kv ? std::to_string(*c.split_kv) : std::string();
    const test::ScopedEnv split_kv("ATTNJIT_SPLIT_KV", c.split_kv ? forced.c_str() : nullptr);
    variant = c_variant(runtime, c);
  }
  SplitKernelCase(const SplitKernelCase&) = delete;
  SplitKernelCase& operator=(const SplitKernelCase&) = delete;
  ~SplitKernelCase() {
    attnjit_variant_destroy(variant);
    device().use(nullptr, 0);
  }

  const codegen::GeneratedKernel& kernel() const { return kernel_; }
  attnjit_variant* variant = nullptr;

 private:
  PreparedCase prepared_;
  codegen::GeneratedKernel kernel_;
  simt::SimtModule module_;
};

// Case `c` through the C API on `variant` against the reference, launched as the split kernel
// and its merge (the case reads no tensor: no summaries).
void check_split_launches(attnjit_variant* variant, const KernelCase& c) {
  const int before = device().launch_count();
  const CaseResult result = run_variant_through_c_api(variant, c);
  INFO(result.describe() << "; emulator: " << device().error());
  CHECK(result.passed());
  CHECK(device().launch_count() - before == 2);
  CHECK(last_launches(1).back().starts_with(codegen::kSplitCombineEntry));
}

}  // namespace

TEST_CASE("fake device: the sm90 kernel runs through the C API on sm_90a", "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;  // the sm_86 run of these cases
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "sm90");
  const auto cache = work_dir("sm90-cache");
  // Note: the default cache, so that the fake driver finds the cubins' sources there and answers
  // cuFuncGetParamInfo with the sm90 parameter block.
  setenv("ATTNJIT_CACHE_DIR", cache.c_str(), 1);
  attnjit_runtime* runtime = cuda_runtime();

  KernelCase gqa;
  gqa.shape = shape(2, 2, 1, 100, 150);
  const std::vector<KernelCase> cases = {gqa, with(gqa, DType::fp16, Layout::blhd, 128)};
  const auto module = emulated_module(cases);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].name());
    device().use(module.get(), static_cast<int>(i));
    const CaseResult result = run_through_c_api(runtime, cases[i]);
    INFO(result.describe());
    CHECK(result.passed());
  }
  device().use(nullptr, 0);

  // What the runtime compiled for this device: sm_90a's sm90 kernel.
  attnjit_variant* variant = nullptr;
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.head_dim = 64;
  REQUIRE(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_OK);
  attnjit_inspect_options inspect;
  attnjit_inspect_options_init(&inspect);
  inspect.parts = ATTNJIT_INSPECT_SOURCE;
  attnjit_variant_info* info = nullptr;
  REQUIRE(attnjit_variant_inspect(&info, variant, &inspect) == ATTNJIT_OK);
  CHECK(std::string(info->arch) == "sm_90a");
  CHECK(std::string(info->kernel_family) == "sm90");
  CHECK(info->cached == 1);
  attnjit_variant_info_destroy(info);
  attnjit_variant_destroy(variant);
  attnjit_runtime_destroy(runtime);
  unsetenv("ATTNJIT_CACHE_DIR");
  std::error_code ignored;
  std::filesystem::remove_all(cache, ignored);
}

TEST_CASE("fake device: the sm90 kernel with masks, scores and tensor summaries",
          "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "sm90");
  // Note: before the harness's cache is first used (one test case per process under ctest), so
  // that the fake driver finds the cubins' sources and reports the sm90 parameter block.
  const auto cache = work_dir("sm90-masks-cache");
  setenv("ATTNJIT_CACHE_DIR", cache.c_str(), 1);
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(300, 4, false, 9)};
  doc.shape = shape(1, 2, 1, 300, 300);
  KernelCase softcap;
  softcap.mask = "q_idx >= kv_idx";
  softcap.score = "30.0 * tanh(score / 30.0)";
  softcap.shape = shape(2, 2, 2, 140, 200);
  const int before = device().launch_count();
  check_through_backend({doc, with(softcap, DType::fp16, Layout::blhd, 128)});
  // Two summaries (doc at q_idx and at kv_idx) and the forward kernel, then one forward.
  CHECK(device().launch_count() - before == 4);
  unsetenv("ATTNJIT_CACHE_DIR");
}

// A heavy score without a mask: its kernel at the wide default tiles (128 x 176 at head dim 128)
// spills heavily, so the JIT serves a masked variant's 128 x 128 (jit/variant_compiler.cpp). The
// call launches that kernel with its configuration, and the emulated module is built from the
// source served_variant_source names (what inspect shows): the reference comes out only if the
// two agree.
TEST_CASE("fake device: a heavy score served with a masked variant's tiles computes the reference",
          "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "sm90");
  const test::ScopedEnv tuning("ATTNJIT_TUNE", nullptr);
  const auto cache = work_dir("sm90-heavy-score-cache");
  setenv("ATTNJIT_CACHE_DIR", cache.c_str(), 1);
  KernelCase silu;
  silu.score = "score / (1 + exp(-score))";
  silu.shape = shape(1, 2, 1, 150, 200);
  const KernelCase c = with(silu, DType::bf16, Layout::bhld, 128);
  KernelCache reader(cache);
  const ServedVariantSource served = served_variant_source(PreparedCase(c).spec, "sm_90a", reader);
  CHECK(served.generated.config.block_m == 128);
  CHECK(served.generated.config.block_n == 128);
  CHECK(served.wide_block_n == 176);
  simt::SimtModule module({served.generated.source}, work_dir("module"));
  device().use(&module, 0);
  const int before = device().launch_count();
  try {
    const CaseResult result = gpu_test::run_case(c);
    INFO(c.name() << ": " << result.describe());
    CHECK(result.passed());
  } catch (const Error& error) {
    FAIL_CHECK(error.what() << "; emulator: " << device().error());
  }
  CHECK(device().launch_count() - before == 1);
  device().use(nullptr, 0);
  unsetenv("ATTNJIT_CACHE_DIR");
}

TEST_CASE(
    "fake device: the persistent sm90 kernel launches one block per SM and at most one "
    "per query tile",
    "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "sm90");
  const test::ScopedEnv tuning("ATTNJIT_TUNE", "sm90_persistent=1");
  const test::ScopedEnv cache("ATTNJIT_CACHE_DIR", work_dir("sm90-persistent-cache").c_str());
  const int multiprocessors = cuda::current_device().multiprocessors;
  REQUIRE(multiprocessors == 4);  // the fake device's: several items per block below
  // 3 query tiles x 4 heads = 12 items on 4 blocks; a document mask whose query tiles 1 and 2
  // keep no key (the keys are all document 0): 3 items, so 3 blocks.
  KernelCase causal;
  causal.mask = "q_idx >= kv_idx";
  causal.shape = shape(1, 4, 2, 300, 300);
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(300, 3, true, 0)};
  doc.shape = shape(1, 1, 1, 300, 100);
  const std::size_t before = device().forward_grids().size();
  check_through_backend({with(causal, DType::fp16, Layout::blhd, 128), doc});
  const std::vector<LaunchGrid>& grids = device().forward_grids();
  REQUIRE(grids.size() == before + 2);
  CHECK(grids[before].grid_x == 4u);
  CHECK(grids[before + 1].grid_x == 3u);
  for (std::size_t i = before; i < grids.size(); ++i) {
    CHECK(grids[i].grid_y == 1u);
    CHECK(grids[i].threads == 384u);
  }
}

TEST_CASE(
    "fake device: the persistent sm90 kernel with three consumer warpgroups launches "
    "512-thread blocks over 192-row query tiles",
    "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "sm90");
  const test::ScopedEnv tuning("ATTNJIT_TUNE", "sm90_persistent=1,sm90_block_m=192");
  const test::ScopedEnv cache("ATTNJIT_CACHE_DIR", work_dir("sm90-m192-persistent-cache").c_str());
  REQUIRE(cuda::current_device().multiprocessors == 4);
  // 2 query tiles of 192 x 3 heads = 6 items on 4 blocks (the second tile ragged: rows 192-299).
  KernelCase causal;
  causal.mask = "q_idx >= kv_idx";
  causal.shape = shape(1, 3, 1, 300, 300);
  const std::size_t before = device().forward_grids().size();
  check_through_backend({causal});
  const std::vector<LaunchGrid>& grids = device().forward_grids();
  REQUIRE(grids.size() == before + 1);
  CHECK(grids[before].grid_x == 4u);
  CHECK(grids[before].grid_y == 1u);
  CHECK(grids[before].threads == 512u);
}

TEST_CASE(
    "fake device: a watchdog kernel computes the reference with the watchdog's record "
    "attached and unclaimed",
    "[dispatch][sm90][watchdog]") {
  if (cuda::current_device().sm != 90) return;
  const WatchdogSetting watchdog("sm90-watchdog-cache");
  const KernelCase causal = watchdog_case();
  check_through_backend({causal});
  Sm90WatchdogRecord** global = device().watchdog_global();
  REQUIRE(global != nullptr);
  REQUIRE(*global != nullptr);
  const std::optional<Sm90WatchdogRecord> record = driver::read_watchdog_record();
  REQUIRE(record.has_value());
  CHECK(record->claimed == 0u);
  CHECK_THAT(driver::watchdog_hint(CUDA_ERROR_ILLEGAL_ADDRESS),
             Catch::Contains("none of its waits timed out"));
}

TEST_CASE("fake device: an expired watchdog wait is named in the error of the failed call",
          "[dispatch][sm90][watchdog]") {
  if (cuda::current_device().sm != 90) return;
  const WatchdogSetting watchdog("sm90-watchdog-expiry-cache");
  const KernelCase causal = watchdog_case();
  const auto module = emulated_module({causal});
  device().use(module.get(), 0);
  Sm90WatchdogRecord expired{};
  expired.claimed = 1;
  expired.barrier = 0x428;
  expired.parity = 1;
  expired.block[0] = 1;
  expired.thread = 130;
  expired.elapsed_ms = 1001;
  std::strcpy(expired.what, "V full");
  device().expire_watchdog_at_next_forward(expired);
  const Error e = test::capture_error([&] { gpu_test::run_case(causal); });
  device().use(nullptr, 0);
  CHECK(e.status() == Status::cuda);
  CHECK_THAT(e.what(),
             Catch::Contains("cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED") &&
                 Catch::Contains("The sm90 mbarrier watchdog (ATTNJIT_TUNE sm90_watchdog_ms) "
                                 "ended the kernel: the wait \"V full\" (mbarrier at shared "
                                 "address 0x428, parity 1) of block (1, 0, 0) thread 130 was "
                                 "still incomplete after 1001 ms"));
}

TEST_CASE("fake device: a call TMA cannot load goes to the sm80 kernel and its checks",
          "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "sm90");
  Runtime runtime(RuntimeOptions{work_dir("fallback-cache").string(), Backend::cuda});
  VariantSpec spec;
  spec.head_dim = 64;
  Variant variant(runtime, spec);
  const std::size_t bytes = 2 * 64 * 2 + 16;
  cuda::DeviceBuffer q(bytes), k(bytes), v(bytes), out(bytes);
  ForwardCall call;
  call.shape = {1, 1, 1, 2, 2, 64};
  // Note: 8 bytes off, which TMA cannot load; the sm80 kernel refuses it with its own reason
  // (without the fallback the sm90 launch would fail with an internal error instead).
  call.buffers.q = static_cast<const char*>(q.get()) + 8;
  call.buffers.k = k.get();
  call.buffers.v = v.get();
  call.buffers.out = out.get();
  call.buffers.q_strides = call.buffers.k_strides = call.buffers.v_strides =
      call.buffers.out_strides = layout_strides(Layout::bhld, 1, 2, 64);
  const Error e = test::capture_error([&] { variant.forward(call); });
  CHECK(e.status() == Status::invalid_argument);
  CHECK_THAT(e.what(), Catch::Contains("query pointer") && Catch::Contains("not aligned to 16"));
}

TEST_CASE("fake device: masked head-dim-64 calls with short rows run the short-rows kernel",
          "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const Sm90CudaRuntime sm90("short-rows-cache");
  attnjit_runtime* runtime = sm90.runtime;

  // 16 and 8 blocks of 128 query rows on the fake's 4 SMs, each keeping 2 or 3 key tiles of 128:
  // short rows. The second is ragged, fp16, GQA, with q_len != kv_len.
  KernelCase window;
  window.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  window.params = {"W:int"};
  window.scalars = {64};
  window.shape = shape(1, 4, 2, 512, 512);
  KernelCase ragged = with(window, DType::fp16, Layout::blhd, 64);
  ragged.shape = shape(1, 2, 1, 450, 470);
  ragged.scalars = {150};
  const KernelCase cases[] = {window, ragged};
  const auto source = [](const KernelCase& c, const codegen::KernelTuning& tuning) {
    const PreparedCase prepared(c);
    return codegen::generate_kernel_source(prepared.mask, prepared.score, c.dtype, c.head_dim,
                                           codegen::Target(90, true), codegen::FamilyRequest::sm90,
                                           tuning);
  };
  // The case through a variant created now, on an emulated module of `expected` alone: it must
  // launch that kernel (the launch's shared memory tells the two kernels apart: the short-rows
  // kernel's stages hold 64 keys) and compute the reference.
  const auto run_expecting = [&](const KernelCase& c, const codegen::GeneratedKernel& expected) {
    const simt::SimtModule module({expected.source}, work_dir("short-rows-module"));
    device().use(&module, 0);
    attnjit_variant* variant = c_variant(runtime, c);
    const CaseResult result = run_variant_through_c_api(variant, c);
    INFO(result.describe() << "; emulator: " << device().error());
    CHECK(result.passed());
    CHECK(device().forward_grids().back().smem_bytes ==
          static_cast<unsigned>(expected.config.smem_bytes));
    attnjit_variant_destroy(variant);
    device().use(nullptr, 0);
  };
  for (const KernelCase& c : cases) {
    INFO(c.name());
    const codegen::GeneratedKernel short_rows = source(c, codegen::short_rows_tuning());
    const codegen::GeneratedKernel standard = source(c, {});
    REQUIRE(short_rows.config.smem_bytes != standard.config.smem_bytes);
    // Note: the rule's choice for long rows and small grids is runtime/short_rows_test.cpp's.
    for (const bool off : {false, true}) {
      INFO((off ? "ATTNJIT_SHORT_ROWS=off" : "auto"));
      std::optional<test::ScopedEnv> switch_off;
      if (off) switch_off.emplace("ATTNJIT_SHORT_ROWS", "off");
      run_expecting(c, off ? standard : short_rows);
    }
  }
  // A tuning of the schedule (here the masked default's own handoff) keeps the standard kernel;
  // the watchdog alone goes into the short-rows kernel too.
  {
    const test::ScopedEnv tuned("ATTNJIT_TUNE", "sm90_handoff=1");
    run_expecting(window, source(window, {}));
  }
  // A short-rows kernel that cannot be had leaves the calls on the standard kernel: here a first
  // call of too few blocks for the rule (4 on 4 SMs) readies everything else before ATTNJIT_TUNE
  // turns bad, so only the short-rows request reads the bad value.
  {
    const simt::SimtModule module({source(window, {}).source}, work_dir("short-rows-module"));
    device().use(&module, 0);
    attnjit_variant* variant = c_variant(runtime, window);
    KernelCase few_blocks = window;
    few_blocks.shape = shape(1, 1, 1, 512, 512);
    CHECK(run_variant_through_c_api(variant, few_blocks).passed());
    const test::ScopedEnv bad("ATTNJIT_TUNE", "sm90_blocks_per_sm=3");
    {
      // The call whose request fails says what the later ones say.
      DeviceCall call(window);
      attnjit_launch_plan plan;
      attnjit_launch_plan_init(&plan);
      REQUIRE(attnjit_variant_launch_plan(&plan, variant, &call.args) == ATTNJIT_OK);
      CHECK(std::string(plan.kernel) == "standard");
      CHECK(std::string(plan.reason) ==
            "the variant's kernel for sm_90a; not the short-rows kernel: the short-rows kernel "
            "could not be built (see the warning)");
      CHECK(launch_reason(variant, call.args) == plan.reason);
    }
    const CaseResult result = run_variant_through_c_api(variant, window);
    INFO(result.describe() << "; emulator: " << device().error());
    CHECK(result.passed());
    CHECK(device().forward_grids().back().smem_bytes ==
          static_cast<unsigned>(source(window, {}).config.smem_bytes));
    attnjit_variant_destroy(variant);
    device().use(nullptr, 0);
  }
  const test::ScopedEnv watched("ATTNJIT_TUNE", "sm90_watchdog_ms=60000");
  const codegen::GeneratedKernel watched_short_rows = source(
      window, codegen::short_rows_tuning(codegen::parse_kernel_tuning("sm90_watchdog_ms=60000")));
  REQUIRE(watched_short_rows.config.watchdog_ms == 60000);
  run_expecting(window, watched_short_rows);
}

// A call of too few query tiles to fill the GPU (a prefill chunk over a long cache, a few heads)
// runs on the sm90 split kernel: its slices, then the merge, each emulated from that kernel's
// module; the results are the reference's. The heuristic splits the chunk of one head (1 block
// for the fake's 4 SMs, 9 key tiles: 2 slices of at least kSm90MinSplitTiles); forced counts
// (ATTNJIT_SPLIT_KV) cut the others unevenly, a causal chunk at the end of its cache and a
// window at the end of a long one from their first kept tile (the window's span is shorter than
// the slices: some keep nothing), a document mask through its tensor summaries, soft-capping in
// fp16 over GQA heads, a paged cache, two sequences' caches of their own lengths, head dim 256.
// A step the decoding entry takes (32 rows or fewer) and ATTNJIT_SPLIT_KV=off keep their kernels.
TEST_CASE("fake device: a call of too few query tiles runs on the sm90 split kernel",
          "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const Sm90CudaRuntime sm90("split-cache");
  attnjit_runtime* runtime = sm90.runtime;

  KernelCase chunk;
  chunk.shape = shape(1, 1, 1, 64, 1100);
  KernelCase causal;
  causal.mask = "kv_idx <= q_idx + P";
  causal.params = {"P:int"};
  causal.scalars = {1300 - 130};
  causal.head_dim = 128;
  causal.shape = shape(1, 1, 1, 130, 1300);
  causal.split_kv = 3;
  KernelCase window;
  window.mask = "kv_idx <= q_idx + P && kv_idx + 200 > q_idx + P";
  window.params = {"P:int"};
  window.scalars = {2000 - 40};
  window.shape = shape(1, 2, 1, 40, 2000);
  window.split_kv = 4;
  window.layout = Layout::blhd;
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(1000, 3, true, 5)};
  doc.shape = shape(1, 1, 1, 200, 1000);
  doc.split_kv = 2;
  KernelCase softcap;
  softcap.score = "30.0 * tanh(score / 30.0)";
  softcap.dtype = DType::fp16;
  softcap.shape = shape(1, 2, 1, 50, 900);
  softcap.split_kv = 4;
  KernelCase paged = causal;
  paged.head_dim = 64;
  paged.page_size = 48;
  paged.split_kv.reset();
  // Two sequences' chunks over their own caches (kv_seq_lens) in pages of 48: uniform slices
  // of the longer cache's tiles, the shorter one's kept span cut the same way.
  KernelCase ragged;
  ragged.mask = "kv_idx <= q_idx + kv_len - q_len";
  ragged.shape = shape(2, 1, 1, 64, 1100);
  ragged.page_size = 48;
  ragged.sequences = SequenceOptions{{64, 64}, {1100, 500}, /*pack_queries=*/false};
  // Head dim 256 (64-key tiles, four 64-column boxes a tile): 11 key tiles in 3 forced slices.
  KernelCase wide;
  wide.mask = "kv_idx % 5 != 2";
  wide.head_dim = 256;
  wide.shape = shape(1, 1, 1, 40, 700);
  wide.split_kv = 3;
  const std::vector<KernelCase> cases = {chunk, causal, window, doc, softcap, paged, ragged, wide};
  for (const KernelCase& c : cases) {
    INFO(c.name());
    const bool tables = c.sequences.has_value();
    const SplitKernelCase split(runtime, c, "split-module");
    attnjit_variant* variant = split.variant;
    {
      DeviceCall call(c);
      const attnjit_launch_plan plan = launch_plan(variant, call.args);
      CHECK(std::string(plan.kernel_family) == "sm90");
      CHECK(std::string(plan.kernel) ==
            (tables ? "varlen" : c.page_size > 0 ? "paged_kv" : "split_kv"));
      CHECK(plan.num_splits == (c.split_kv ? *c.split_kv : 2));
      CHECK_THAT(plan.reason, Catch::Contains("split"));
    }
    const int before = device().launch_count();
    const CaseResult result = run_variant_through_c_api(variant, c);
    INFO(result.describe() << "; emulator: " << device().error());
    CHECK(result.passed());
    const std::size_t summaries = c.tensors.empty() ? 0 : 2;
    CHECK(device().launch_count() - before == static_cast<int>(summaries + 2));
    const std::vector<std::string> launches = last_launches(2);
    CHECK(launches.back().starts_with(codegen::kSplitCombineEntry));
    CHECK(device().forward_grids().back().smem_bytes ==
          static_cast<unsigned>(split.kernel().config.smem_bytes));
  }

  // Not split: ATTNJIT_SPLIT_KV=off (the standard kernel), and a decoding step's 32 rows or
  // fewer (the sm80 kernel's decoding entry).
  KernelCase off = chunk;
  off.split_kv = 1;
  KernelCase step = chunk;
  step.shape = shape(1, 1, 1, 32, 1100);
  const std::pair<KernelCase, const char*> unsplit[] = {{off, "standard"}, {step, "decoding"}};
  for (const auto& [c, kernel] : unsplit) {
    INFO(c.name());
    const test::ScopedEnv split_kv("ATTNJIT_SPLIT_KV", c.split_kv ? "off" : nullptr);
    attnjit_variant* variant = c_variant(runtime, c);
    DeviceCall call(c);
    const attnjit_launch_plan plan = launch_plan(variant, call.args);
    CHECK(std::string(plan.kernel) == kernel);
    CHECK(plan.num_splits == (c.shape.q_len > 32 ? 1 : plan.num_splits));
    attnjit_variant_destroy(variant);
  }
}

// A few queries of a GQA group (a speculative step of 9-40 draft tokens, a short chunk) run on
// the sm90 split kernel with the group's query heads packed into its 128-row blocks: row r is
// query r / g of query head r % g, Q loaded through the 5-d map (a box of whole queries), the
// hooks given the real query and q_len, the outputs, LSEs and partials stored at the call's own
// rows. Groups of 4, 8, 16 and 7 (blocks of whole queries: 126 rows); split by the heuristic,
// forced, or not at all (enough blocks: the outputs written directly); a paged cache and two
// sequences' key counts. A step of 64 rows or fewer stays on the decoding entry, a score of `h`
// and ATTNJIT_PACK_GQA=off stay unpacked.
TEST_CASE("fake device: a few queries of a GQA group run packed on the sm90 split kernel",
          "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const Sm90CudaRuntime sm90("packed-split-cache");
  attnjit_runtime* runtime = sm90.runtime;

  // 20 queries of 8 heads at the end of a cache of 1100: 160 rows in 2 blocks (8 unpacked).
  KernelCase causal;
  causal.mask = "kv_idx <= q_idx + kv_len - q_len";
  causal.shape = shape(1, 8, 1, 20, 1100);
  // 24 queries of 4 heads over documents (96 rows: one block), fp16, 3 forced slices.
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(600, 3, true, 7)};
  doc.shape = shape(1, 8, 2, 24, 600);
  doc.dtype = DType::fp16;
  doc.split_kv = 3;
  doc.layout = Layout::blhd;
  // 9 queries of 16 heads (144 rows, boxes of 8 queries), a score of the query and key, D=128.
  KernelCase distance;
  distance.mask = "kv_idx <= q_idx + kv_len - q_len";
  distance.score = "score - 0.05 * abs(q_idx - kv_idx)";
  distance.head_dim = 128;
  distance.shape = shape(1, 16, 1, 9, 500);
  distance.split_kv = 2;
  // Enough blocks to fill the fake's 4 SMs: unsplit, the outputs stored directly.
  KernelCase wide;
  wide.mask = "kv_idx % 3 != 1";
  wide.shape = shape(2, 8, 2, 40, 300);
  KernelCase paged = causal;
  paged.page_size = 48;
  KernelCase ragged;
  ragged.mask = "kv_idx <= q_idx + kv_len - q_len";
  ragged.shape = shape(2, 8, 1, 12, 1100);
  ragged.page_size = 48;
  ragged.sequences = SequenceOptions{{12, 12}, {1100, 500}, /*pack_queries=*/false};
  // Groups of 7 (Qwen2.5's 28 query heads over 4): blocks of 18 whole queries, 126 rows (the
  // tile's last two zeros); 20 queries of 2 groups in 4 blocks, unsplit on the fake's 4 SMs.
  KernelCase seven = causal;
  seven.shape = shape(1, 14, 2, 20, 1100);
  seven.dtype = DType::fp16;
  // 73 queries of a group of 7, split: 511 rows in 5 blocks of 126 (4 of 128 would hold them),
  // so a block's slot is its index over 5 query tiles.
  KernelCase seven_split = causal;
  seven_split.shape = shape(1, 7, 1, 73, 700);
  seven_split.split_kv = 2;
  struct Packed {
    KernelCase c;
    int group;
    bool split;
  };
  const std::vector<Packed> cases = {{causal, 8, true}, {doc, 4, true},        {distance, 16, true},
                                     {wide, 4, false},  {paged, 8, true},      {ragged, 8, true},
                                     {seven, 7, false}, {seven_split, 7, true}};
  for (const auto& [c, group, split_expected] : cases) {
    INFO(c.name());
    const bool tables = c.sequences.has_value();
    const SplitKernelCase split(runtime, c, "packed-split-module");
    attnjit_variant* variant = split.variant;
    int splits = 1;
    {
      DeviceCall call(c);
      const attnjit_launch_plan plan = launch_plan(variant, call.args);
      CHECK(std::string(plan.kernel_family) == "sm90");
      CHECK(std::string(plan.kernel) == (tables            ? "varlen"
                                         : c.page_size > 0 ? "paged_kv"
                                                           : "split_kv"));
      CHECK(plan.gqa_group == group);
      CHECK_THAT(plan.reason, Catch::Contains("pack"));
      if (c.split_kv) CHECK(plan.num_splits == *c.split_kv);
      splits = plan.num_splits;
      // The census's query tiles are the packed blocks' whole queries of each head (the call's
      // tensors would be read from the host: only the cases without one).
      if (c.tensors.empty() && !tables) {
        attnjit_tile_census census{};
        REQUIRE(attnjit_variant_tile_census(&census, variant, &call.args, nullptr) == ATTNJIT_OK);
        CHECK(census.tile_q == 128 / group);
      }
    }
    CHECK((splits > 1) == split_expected);
    const int before = device().launch_count();
    const CaseResult result = run_variant_through_c_api(variant, c);
    INFO(result.describe() << "; emulator: " << device().error());
    CHECK(result.passed());
    const int summaries = c.tensors.empty() ? 0 : 2;
    CHECK(device().launch_count() - before == summaries + (splits > 1 ? 2 : 1));
    if (splits > 1) CHECK(last_launches(1).back().starts_with(codegen::kSplitCombineEntry));
  }

  // Not packed on the split kernel: 8 queries of 8 heads (64 rows: the decoding entry packs
  // them); 40 queries (8 blocks of one head each fill the fake's 4 SMs: the short-rows kernel,
  // as any such call) with a score of the head, and with ATTNJIT_PACK_GQA=off.
  KernelCase step = causal;
  step.shape = shape(1, 8, 1, 8, 1100);
  KernelCase headed = causal;
  headed.score = "score - 0.1 * h";
  headed.shape = shape(1, 8, 1, 40, 1100);
  KernelCase off = headed;
  off.score.clear();
  const std::tuple<KernelCase, const char*, int> unpacked[] = {
      {step, "decoding", 8}, {headed, "short_rows", 1}, {off, "short_rows", 1}};
  for (const auto& [c, kernel, group] : unpacked) {
    INFO(c.name());
    const test::ScopedEnv pack("ATTNJIT_PACK_GQA",
                               &c == &std::get<0>(unpacked[2]) ? "off" : nullptr);
    attnjit_variant* variant = c_variant(runtime, c);
    DeviceCall call(c);
    const attnjit_launch_plan plan = launch_plan(variant, call.args);
    CHECK(std::string(plan.kernel) == kernel);
    CHECK(plan.gqa_group == group);
    attnjit_variant_destroy(variant);
  }
}

// A chunk or a speculative step over a batch of caches of their own lengths (key counts) runs on
// the sm90 split kernel in slices sized to each sequence's key count on the device (balanced_slice:
// a long cache's keys in many slices, a short one's in one, the slots past them idle), at least
// kSm90MinSplitTiles tiles a slice, and merged through the slot table. Unpacked and packed (a GQA
// group's heads in the rows), dense, packed (kv_seq_starts) and paged caches, a score that reads
// kv_len (no mask: balanced too), an empty sequence (zeros, -inf) and a batch of them. A mask that
// keeps no key of a long cache's first tile (a window) stays uniform, as does every call with
// ATTNJIT_BALANCE_SPLIT=off.
TEST_CASE("fake device: the sm90 split kernel balances its slices over ragged key counts",
          "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const Sm90CudaRuntime sm90("balanced-split-cache");
  attnjit_runtime* runtime = sm90.runtime;

  // 40 queries at the end of caches of 1500, 130, 0 and 700 keys: 12, 2, 0 and 6 key tiles.
  KernelCase chunks;
  chunks.mask = "kv_idx <= q_idx + kv_len - q_len";
  chunks.shape = shape(4, 2, 2, 40, 1500);
  chunks.sequences = SequenceOptions{{40, 40, 40, 40}, {1500, 130, 0, 700}, false};
  chunks.split_kv = 3;
  // 12 draft tokens of 8 heads over paged caches of 1100, 300 and 64 keys (96 packed rows).
  KernelCase draft;
  draft.mask = "kv_idx <= q_idx + kv_len - q_len";
  draft.shape = shape(3, 8, 1, 12, 1100);
  draft.page_size = 48;
  draft.sequences = SequenceOptions{{12, 12, 12}, {1100, 300, 64}, false};
  draft.split_kv = 3;
  // No mask, a score of kv_len, fp16 [B, L, H, D] at head dim 128.
  KernelCase scored;
  scored.score = "score - 0.05 * float(kv_len - 1 - kv_idx)";
  scored.shape = shape(2, 2, 2, 70, 900);
  scored.head_dim = 128;
  scored.dtype = DType::fp16;
  scored.layout = Layout::blhd;
  scored.sequences = SequenceOptions{{70, 70}, {900, 90}, false};
  scored.split_kv = 3;
  // Packed keys (kv_seq_starts) with unused rows around them.
  KernelCase packed_keys = chunks;
  packed_keys.shape = shape(3, 2, 2, 40, 900);
  packed_keys.sequences = SequenceOptions{{40, 40, 40}, {900, 0, 350}, false, true, 3};
  // The draft tokens over packed keys instead of pages.
  KernelCase draft_keys = draft;
  draft_keys.page_size = 0;
  draft_keys.sequences = SequenceOptions{{12, 12, 12}, {1100, 300, 64}, false, true, 2};
  KernelCase empty;
  empty.shape = shape(2, 1, 1, 48, 600);
  empty.sequences = SequenceOptions{{48, 48}, {0, 0}, false};
  empty.split_kv = 3;
  // A window of 200 keys before each sequence's end: none of a long cache's first tile.
  KernelCase window = chunks;
  window.mask = "kv_idx <= q_idx + kv_len - q_len && q_idx + kv_len - q_len - kv_idx < 200";
  struct Balanced {
    KernelCase c;
    int group;
    bool balanced;
    bool switched_off;
  };
  const std::vector<Balanced> cases = {
      {chunks, 1, true, false},      {draft, 8, true, false},      {scored, 1, true, false},
      {packed_keys, 1, true, false}, {draft_keys, 8, true, false}, {empty, 1, true, false},
      {window, 1, false, false},     {chunks, 1, false, true},     {draft, 8, false, true}};
  for (const auto& [c, group, balanced, switched_off] : cases) {
    INFO(c.name() << (switched_off ? " with ATTNJIT_BALANCE_SPLIT=off" : ""));
    const test::ScopedEnv balance("ATTNJIT_BALANCE_SPLIT", switched_off ? "off" : nullptr);
    const SplitKernelCase split(runtime, c, "balanced-split-module");
    attnjit_variant* variant = split.variant;
    {
      DeviceCall call(c);
      const attnjit_launch_plan plan = launch_plan(variant, call.args);
      CHECK(std::string(plan.kernel_family) == "sm90");
      CHECK(std::string(plan.kernel) == "varlen");
      CHECK(plan.gqa_group == group);
      CHECK(plan.num_splits == *c.split_kv);
      CHECK((plan.split_tiles == 0) == balanced);
      CHECK_THAT(launch_reason(variant, call.args),
                 Catch::Contains(balanced ? "slices a sequence on average, sized to its key count"
                                          : "key tiles"));
    }
    check_split_launches(variant, c);
  }
}

// A chunked prefill's packed queries (q_seq_starts) over long caches, too few query tiles to fill
// the GPU, run split on the sm90 split kernel: each slice writes the packed rows of its head
// (AttentionForward::partial_row0), and the merge takes a block per packed row, writing only the
// rows a sequence holds (packed_row_held: the rows around and between the sequences keep their
// poison, which the harness checks). Over a padded cache with key counts, packed keys and a paged
// cache; an empty sequence (no queries) and one of many; a window mask (its slices cut from the
// kept span); 40 sequences. Unsplit where the heuristic finds enough query tiles.
TEST_CASE("fake device: packed queries split their keys on the sm90 split kernel",
          "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const Sm90CudaRuntime sm90("packed-queries-split-cache");
  attnjit_runtime* runtime = sm90.runtime;

  KernelCase chunks;
  chunks.mask = "kv_idx <= q_idx + kv_len - q_len";
  chunks.shape = shape(3, 2, 2, 100, 1500);
  chunks.sequences = SequenceOptions{{100, 0, 37}, {1500, 200, 900}, true, false, 3};
  chunks.split_kv = 3;
  KernelCase keys;  // packed keys, no mask, a score of kv_len, fp16 [B, L, H, D] at D=128, GQA
  keys.score = "score - 0.05 * float(kv_len - 1 - kv_idx)";
  keys.shape = shape(2, 2, 1, 70, 900);
  keys.head_dim = 128;
  keys.dtype = DType::fp16;
  keys.layout = Layout::blhd;
  keys.sequences = SequenceOptions{{70, 20}, {900, 400}, true, true, 2};
  keys.split_kv = 2;
  KernelCase paged;
  paged.mask = "kv_idx <= q_idx + kv_len - q_len";
  paged.shape = shape(2, 4, 2, 64, 1100);
  paged.page_size = 48;
  paged.sequences = SequenceOptions{{64, 9}, {1100, 500}, true, false, 0};
  paged.split_kv = 3;
  KernelCase window = chunks;
  window.mask = "kv_idx <= q_idx + kv_len - q_len && q_idx + kv_len - q_len - kv_idx < 300";
  // 40 sequences of 0-8 queries: the merge's search for a row's sequence in two passes of 32.
  KernelCase many;
  many.shape = shape(40, 1, 1, 8, 600);
  many.sequences = SequenceOptions{{}, {}, true, false, 1};
  for (int b = 0; b < 40; ++b) {
    many.sequences->q_lens.push_back((b * 5) % 9);
    many.sequences->kv_lens.push_back(b % 7 == 3 ? 0 : (b * 37) % 600 + 1);
  }
  many.split_kv = 2;
  for (const KernelCase& c : {chunks, keys, paged, window, many}) {
    INFO(c.name());
    const SplitKernelCase split(runtime, c, "packed-queries-split-module");
    attnjit_variant* variant = split.variant;
    {
      DeviceCall call(c);
      const attnjit_launch_plan plan = launch_plan(variant, call.args);
      CHECK(std::string(plan.kernel_family) == "sm90");
      CHECK(std::string(plan.kernel) == "varlen");
      CHECK(std::string(plan.entry) == codegen::kForwardEntry);
      CHECK(plan.gqa_group == 1);
      CHECK(plan.num_splits == *c.split_kv);
      CHECK(plan.split_tiles > 0);  // uniform: packed queries are never balanced
      CHECK_THAT(launch_reason(variant, call.args),
                 Catch::Contains("packed queries") && Catch::Contains("splits keys"));
    }
    check_split_launches(variant, c);
  }
  // Not split: ATTNJIT_SPLIT_KV=off, and the heuristic where the sequences' query tiles fill the
  // fake's 4 SMs (4 heads of 300 packed rows: 12 blocks).
  KernelCase off = chunks;
  off.split_kv = 1;
  KernelCase full = chunks;
  full.shape = shape(2, 4, 4, 200, 1500);
  full.sequences = SequenceOptions{{200, 100}, {1500, 700}, true, false, 0};
  full.split_kv.reset();
  for (const KernelCase& c : {off, full}) {
    INFO(c.name());
    const test::ScopedEnv split_kv("ATTNJIT_SPLIT_KV", c.split_kv ? "off" : nullptr);
    attnjit_variant* variant = c_variant(runtime, c);
    DeviceCall call(c);
    const attnjit_launch_plan plan = launch_plan(variant, call.args);
    CHECK(std::string(plan.kernel) == "varlen");
    CHECK(plan.num_splits == 1);
    attnjit_variant_destroy(variant);
  }
}

// A split kernel that cannot be had (here: ATTNJIT_TUNE turns bad after the variant's other
// kernels are ready, so only the split kernel's request reads it) leaves its calls where they ran
// before it existed: split on the sm80 kernel, with one warning, and later calls do not ask again.
TEST_CASE("fake device: a split kernel that cannot be built leaves its calls on the sm80 kernel",
          "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const Sm90CudaRuntime sm90("split-fallback-cache");
  attnjit_runtime* runtime = sm90.runtime;

  KernelCase step;  // a mask no other test of the process has (head dim 128: no short rows)
  step.mask = "kv_idx != 1099 - q_idx";
  step.head_dim = 128;
  step.shape = shape(1, 1, 1, 1, 1100);
  KernelCase prefill = step;
  prefill.shape = shape(1, 4, 1, 130, 130);  // 8 blocks for 4 SMs: unsplit
  KernelCase chunk = step;
  chunk.shape = shape(1, 1, 1, 64, 1100);  // 1 block: the split kernel, were it there
  const PreparedCase prepared(step);
  const auto source = [&](codegen::FamilyRequest family) {
    return codegen::generate_kernel_source(prepared.mask, prepared.score, step.dtype, step.head_dim,
                                           codegen::Target(90, true), family)
        .source;
  };
  const simt::SimtModule module(
      {source(codegen::FamilyRequest::sm80), source(codegen::FamilyRequest::sm90)},
      work_dir("split-fallback-module"));
  attnjit_variant* variant = c_variant(runtime, step);
  const auto run = [&](const KernelCase& c, int kernel) {
    device().use(&module, kernel);
    const CaseResult result = run_variant_through_c_api(variant, c);
    INFO(c.name() << ": " << result.describe() << "; emulator: " << device().error());
    CHECK(result.passed());
  };
  run(step, 0);     // the sm80 kernel's decoding entry
  run(prefill, 1);  // the sm90 kernel (the split kernel's rule read: no schedule tuning)
  const test::ScopedEnv bad("ATTNJIT_TUNE", "sm90_blocks_per_sm=3");
  const test::LogCapture log;
  {
    DeviceCall call(chunk);
    const attnjit_launch_plan plan = launch_plan(variant, call.args);
    CHECK(std::string(plan.kernel_family) == "sm80");
    CHECK(std::string(plan.kernel) == "decoding");
    CHECK(plan.num_splits > 1);
  }
  run(chunk, 0);
  run(chunk, 0);
  CHECK(log.count("the sm90 split kernel is not available") == 1);
  CHECK(last_launches(2).back().starts_with(codegen::kSplitCombineEntry));
  attnjit_variant_destroy(variant);
  device().use(nullptr, 0);
}

// attnjit_variant_prepare readies every kernel a call may run, not only the variant's own: on
// sm_90a the sm90 kernel, the sm80 kernel that decoding steps run on, and (a masked head-dim-64
// variant) the short-rows kernel, each loaded into the context. The calls after it load no
// module, so a CUDA graph capture (where the driver refuses a load) may begin right after it.
TEST_CASE("fake device: a prepared variant's calls load no module", "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const Sm90CudaRuntime sm90("prepare-cache");
  attnjit_runtime* runtime = sm90.runtime;

  // A mask no other test of the process has, so that its modules are not loaded already.
  KernelCase decode;
  decode.mask = "kv_idx <= q_idx + kv_len - q_len && kv_idx != U";
  decode.params = {"U:int"};
  decode.scalars = {-7};
  decode.shape = shape(1, 2, 1, 1, 600);  // one query per head: packed and split, sm80 kernel
  KernelCase prefill = decode;
  prefill.shape = shape(1, 1, 1, 130, 130);  // 2 query tiles: the sm90 kernel, not short rows
  KernelCase chunk = decode;
  chunk.shape = shape(1, 1, 1, 64, 1100);  // 1 block for 4 SMs, 9 key tiles: the split kernel
  const auto source = [](const KernelCase& c, codegen::FamilyRequest request) {
    const PreparedCase prepared(c);
    return codegen::generate_kernel_source(prepared.mask, prepared.score, c.dtype, c.head_dim,
                                           codegen::Target(90, true), request)
        .source;
  };
  const PreparedCase prepared_chunk(chunk);
  const simt::SimtModule module(
      {source(decode, codegen::FamilyRequest::sm80), source(prefill, codegen::FamilyRequest::sm90),
       codegen::generate_split_kernel_source(prepared_chunk.mask, prepared_chunk.score, chunk.dtype,
                                             chunk.head_dim, codegen::Target(90, true),
                                             /*paged_kv=*/false, {})
           .source},
      work_dir("prepare-module"));
  attnjit_variant* variant = c_variant(runtime, decode);
  // Note: the emulator runs the module's kernel the case's launch is of (the sm80 one for the
  // decoding step, the sm90 one for the prefill, the split one for the chunk).
  const auto run = [&](const KernelCase& c) {
    device().use(&module, &c == &decode ? 0 : &c == &prefill ? 1 : 2);
    const CaseResult result = run_variant_through_c_api(variant, c);
    INFO(c.name() << ": " << result.describe() << "; emulator: " << device().error());
    CHECK(result.passed());
  };

  // Unprepared, a call loads the kernel it runs: the decoding step its sm80 module.
  const int first = device().module_load_count();
  run(decode);
  CHECK(device().module_load_count() == first + 1);
  // prepare loads the other three (the sm90 kernel, its split kernel and the short-rows
  // kernel); then no call loads.
  REQUIRE(attnjit_variant_prepare(variant) == ATTNJIT_OK);
  CHECK(device().module_load_count() == first + 4);
  run(prefill);
  run(chunk);
  run(decode);
  CHECK(device().module_load_count() == first + 4);
  // A second prepare finds everything loaded.
  REQUIRE(attnjit_variant_prepare(variant) == ATTNJIT_OK);
  CHECK(device().module_load_count() == first + 4);

  attnjit_variant_destroy(variant);
  device().use(nullptr, 0);
}

// The timeline tests' settings: the sm90 family with the timeline on, a cache of their own, and
// a causal call whose query tile i keeps key tiles 0 .. i (head dim 64: three 128-row query tiles
// a head).
struct TimelineSetting {
  explicit TimelineSetting(const char* name) : dir(work_dir(name)) {}
  std::filesystem::path dir;
  test::ScopedEnv family{"ATTNJIT_KERNEL_FAMILY", "sm90"};
  test::ScopedEnv tuning{"ATTNJIT_TUNE", "sm90_timeline=1"};
  test::ScopedEnv cache{"ATTNJIT_CACHE_DIR", dir.c_str()};

  static KernelCase causal() {
    KernelCase c;
    c.mask = "q_idx >= kv_idx";
    c.shape = shape(1, 2, 1, 300, 300);
    return c;
  }
};

// The timeline (ATTNJIT_TUNE=sm90_timeline=1, sm90_timeline.cuh, runtime/sm90_timeline.cpp): the
// kernel still computes the reference, and the file $ATTNJIT_TIMELINE names holds one record per
// block, each naming its work item, the key tiles its producer loaded (a causal query tile i keeps
// tiles 0 .. i) and its stamps in the order the block's threads reached them (the emulator's clock
// is one counter for every thread).
TEST_CASE("fake device: a timeline kernel writes one record per block, its stamps in order",
          "[dispatch][sm90][timeline]") {
  if (cuda::current_device().sm != 90) return;
  const TimelineSetting setting("sm90-timeline-cache");
  const std::string path = (setting.dir / "timeline.json").string();
  const test::ScopedEnv file("ATTNJIT_TIMELINE", path.c_str());
  check_through_backend({TimelineSetting::causal()});

  std::ifstream in(path);
  REQUIRE(in.good());
  const nlohmann::json timeline = nlohmann::json::parse(in);
  CHECK(timeline["stamps"].size() == static_cast<std::size_t>(kSm90TimelineStamps));
  CHECK(timeline["stamps"][kStampFirstKReady] == "first_k_ready");
  CHECK_THAT(timeline["kernel"].get<std::string>(), Catch::Contains("sm90 d64 128x128"));
  const auto& records = timeline["records"];
  REQUIRE(records.size() == 6u);
  std::set<std::pair<int, int>> items;
  for (const auto& record : records) {
    INFO(record.dump());
    CHECK(record["written"] == 1);
    CHECK(record["batch"] == 0);
    items.emplace(record["head"].get<int>(), record["q_tile"].get<int>());
    CHECK(record["tiles"] == record["q_tile"].get<int>() + 1);
    CHECK(record["end_ns"].get<long long>() > record["start_ns"].get<long long>());
    const std::vector<long long> clock = record["clock"].get<std::vector<long long>>();
    REQUIRE(clock.size() == static_cast<std::size_t>(kSm90TimelineStamps));
    for (const long long stamp : clock) CHECK(stamp > 0);  // every stamp reached
    CHECK(clock[kStampBlockStart] < clock[kStampSetupDone]);
    CHECK(clock[kStampSetupDone] < clock[kStampFirstKIssued]);
    CHECK(clock[kStampFirstKIssued] < clock[kStampLastVIssued]);
    CHECK(clock[kStampSetupDone] < clock[kStampQReady]);
    CHECK(clock[kStampFirstKIssued] < clock[kStampFirstKReady]);
    CHECK(clock[kStampQReady] < clock[kStampLoopDone]);
    CHECK(clock[kStampFirstKReady] < clock[kStampLoopDone]);
    CHECK(clock[kStampLoopDone] < clock[kStampOutputDone]);
    CHECK(clock[kStampQReady] < clock[kStampLastConsumerDone]);
  }
  CHECK(items.size() == 6u);  // every (head, query tile) once
}

// The timeline is a measuring aid: where it cannot keep its records, the call still succeeds and
// the user is told why there is no file. A path in a missing directory warns at each call and
// leaves no temporary behind; a call captured into a CUDA graph (the records need the stream
// finished) warns once a process, records nothing in its replays, and leaves the plain call's
// file as it was.
TEST_CASE("fake device: a timeline call it cannot record keeps its results and says why",
          "[dispatch][sm90][timeline]") {
  if (cuda::current_device().sm != 90) return;
  const TimelineSetting setting("sm90-timeline-unkept-cache");
  const std::filesystem::path& dir = setting.dir;
  const KernelCase causal = TimelineSetting::causal();
  const auto module = emulated_module({causal});
  device().use(module.get(), 0);
  const auto passes = [](const KernelCase& c) {
    const CaseResult result = gpu_test::run_case(c);
    INFO(result.describe() << "; emulator: " << device().error());
    return result.passed();
  };

  SECTION("a file in a missing directory") {
    const std::filesystem::path missing = dir / "missing";
    const std::string path = (missing / "timeline.json").string();
    const test::ScopedEnv file("ATTNJIT_TIMELINE", path.c_str());
    const test::LogCapture log;
    CHECK(passes(causal));
    CHECK(passes(causal));
    CHECK(log.count("timeline: could not write " + path) == 2);
    CHECK_FALSE(std::filesystem::exists(missing));
  }
  SECTION("a path that names a directory") {
    // The temporary is written; the rename onto the directory fails, and the warning names the
    // rename's reason (not that of removing the temporary, which succeeds).
    const std::filesystem::path taken = dir / "taken";
    std::filesystem::create_directories(taken);
    const test::ScopedEnv file("ATTNJIT_TIMELINE", taken.string().c_str());
    const test::LogCapture log;
    CHECK(passes(causal));
    const std::string reason = std::make_error_code(std::errc::is_a_directory).message();
    CHECK(log.count("timeline: could not write " + taken.string() + " (" + reason + ")") == 1);
    CHECK_FALSE(std::filesystem::exists(taken.string() + ".tmp"));
    CHECK(std::filesystem::is_directory(taken));
  }
  SECTION("a call captured into a graph") {
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "timeline.json").string();
    const test::ScopedEnv file("ATTNJIT_TIMELINE", path.c_str());
    const test::LogCapture log;
    KernelCase captured = causal;
    captured.graph = KernelCase::Graph::after_plain_call;
    CHECK(passes(captured));
    CHECK(log.count("being captured into a CUDA graph") == 1);
    // The plain call's records, whole: the capture neither wrote nor truncated the file.
    std::ifstream in(path);
    REQUIRE(in.good());
    CHECK(nlohmann::json::parse(in)["records"].size() == 6u);
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  }
  device().use(nullptr, 0);
}

// Without a file to write, a timeline kernel runs as any other and keeps nothing.
TEST_CASE("fake device: a timeline kernel without ATTNJIT_TIMELINE computes the reference",
          "[dispatch][sm90][timeline]") {
  if (cuda::current_device().sm != 90) return;
  const TimelineSetting setting("sm90-timeline-nofile-cache");
  const test::ScopedEnv file("ATTNJIT_TIMELINE", nullptr);
  check_through_backend({watchdog_case()});
}
