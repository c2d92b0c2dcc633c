// The CUDA backend end to end without a GPU: the fake libcuda (tests/fake_driver) stands in for the
// driver, and each launch it receives runs under the SIMT emulator from the kernel source the
// backend compiled. So these tests check what the GPU tests check, through the same harness
// (tests/gpu/gpu_harness.cpp): the checks before launch, the pointers, strides, grid, shared-memory
// opt-in, summary launches and the FwdParams the backend passes, the C API's cuda backend, and
// results against the CPU reference. What they cannot check is the real driver and hardware.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnjit/attnjit.h"
#include "attnjit/sm90_watchdog_record.cuh"
#include "codegen/kernel_tuning.hpp"
#include "codegen/short_rows.hpp"
#include "codegen/variant_source.hpp"
#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "driver/cuda_driver.hpp"
#include "driver/watchdog_record.hpp"
#include "fake_cuda.h"
#include "gpu_harness.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_memory.hpp"
#include "runtime/forward_plan.hpp"
#include "runtime/runtime.hpp"
#include "runtime/variant.hpp"
#include "simt_module.hpp"
#include "support/capture_error.hpp"
#include "support/case_tables.hpp"
#include "support/scoped_env.hpp"

using namespace attnjit;
using namespace attnjit::kernel_test;

namespace {

// The cases check the sm80 kernel's launches unless they ask for the sm90 kernel themselves: on
// the fake sm_90a device `auto` gives sm90. Defaults, so that a run's own environment (ctest's
// sm_86 run, a developer's) wins; set before main, since catch_discover_tests can pass the tests
// only one variable (CMakeLists.txt).
const bool kEnvironmentDefaults = [] {
  ::setenv("ATTNJIT_KERNEL_FAMILY", "sm80", /*overwrite=*/0);
  ::setenv("ATTNJIT_LOG_LEVEL", "error", /*overwrite=*/0);
  return true;
}();

// Runs the fake driver's launches with kernel `kernel` of `module`.
class EmulatedDevice {
 public:
  EmulatedDevice() {
    // Note: the same path the backend dlopens, so the same (already loaded) library.
    void* handle = dlopen(driver::driver_library_path().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) throw std::runtime_error("cannot load the fake CUDA driver");
    set_launcher_ = reinterpret_cast<AttnjitFakeSetLauncher>(
        dlsym(handle, "attnjit_fake_cuda_set_launcher"));
    allocations_ =
        reinterpret_cast<AttnjitFakeAllocations>(dlsym(handle, "attnjit_fake_cuda_allocations"));
    launch_count_ =
        reinterpret_cast<AttnjitFakeLaunchCount>(dlsym(handle, "attnjit_fake_cuda_launch_count"));
    param_info_past_end_ = reinterpret_cast<AttnjitFakeParamInfoPastEnd>(
        dlsym(handle, "attnjit_fake_cuda_param_info_past_end"));
    module_global_ = reinterpret_cast<AttnjitFakeModuleGlobal>(
        dlsym(handle, "attnjit_fake_cuda_module_global"));
    if (set_launcher_ == nullptr || allocations_ == nullptr || launch_count_ == nullptr ||
        param_info_past_end_ == nullptr || module_global_ == nullptr) {
      throw std::runtime_error(driver::driver_library_path() + " is not the fake CUDA driver");
    }
    set_launcher_(&EmulatedDevice::launch, this);
  }
  ~EmulatedDevice() { set_launcher_(nullptr, nullptr); }

  void use(const simt::SimtModule* module, int kernel) {
    module_ = module;
    kernel_ = kernel;
    error_.clear();
  }
  const std::string& error() const { return error_; }
  // The grids of the forward launches so far (either entry), oldest first, and their entries.
  const std::vector<LaunchGrid>& forward_grids() const { return forward_grids_; }
  const std::vector<std::string>& forward_entries() const { return forward_entries_; }
  // Every launch so far (any entry), oldest first: its entry and whether it was programmatic.
  struct LaunchRecord {
    std::string function;
    bool programmatic = false;
    int carveout = CU_SHAREDMEM_CARVEOUT_DEFAULT;  // the function's preference at the launch
  };
  const std::vector<LaunchRecord>& launches() const { return launches_; }
  int launch_count() const { return launch_count_(); }
  int param_info_past_end() const { return param_info_past_end_(); }
  // Where the loaded watchdog kernel's record pointer lives (its module global), or null.
  Sm90WatchdogRecord** watchdog_global() const {
    return static_cast<Sm90WatchdogRecord**>(module_global_(ATTNJIT_SM90_WATCHDOG_SYMBOL_NAME));
  }
  // The next forward launch does what an expired watchdog wait does on the hardware: it fills
  // the record the kernel's global points at, and the launch fails.
  void expire_watchdog_at_next_forward(const Sm90WatchdogRecord& record) { expiry_ = record; }

 private:
  static int launch(const AttnjitFakeLaunch* launch, void* user) {
    auto& self = *static_cast<EmulatedDevice*>(user);
    try {
      self.run(*launch);
      return 0;
    } catch (const std::exception& error) {
      self.error_ = error.what();
      return 1;
    }
  }

  void run(const AttnjitFakeLaunch& launch) {
    if (module_ == nullptr) throw std::runtime_error("a launch with no emulated module in use");
    // Every live allocation of the fake is "device memory" the kernels may read and write.
    std::vector<AttnjitFakeRange> ranges(static_cast<std::size_t>(allocations_(nullptr, 0)));
    allocations_(ranges.data(), static_cast<int>(ranges.size()));
    std::vector<SimtRegion> regions;
    for (const AttnjitFakeRange& range : ranges) regions.push_back({range.data, range.bytes, 1});
    LaunchGrid grid;
    grid.grid_x = launch.grid_x;
    grid.grid_y = launch.grid_y;
    grid.threads = launch.threads;
    grid.smem_bytes = launch.smem_bytes;
    launches_.push_back({launch.function, launch.programmatic != 0, launch.carveout});
    if (std::string(launch.function) == codegen::kDecodeEntry) {
      forward_grids_.push_back(grid);
      forward_entries_.push_back(launch.function);
    }
    if (std::string(launch.function) == codegen::kForwardEntry) {
      forward_grids_.push_back(grid);
      forward_entries_.push_back(launch.function);
      if (expiry_) {
        Sm90WatchdogRecord** global = watchdog_global();
        if (global == nullptr || *global == nullptr) {
          throw std::runtime_error("the watchdog kernel's record pointer was never set");
        }
        **global = *expiry_;
        expiry_.reset();
        throw std::runtime_error("the watchdog faulted the kernel");
      }
    }
    module_->run_launch(kernel_, launch.function, grid, launch.params, regions,
                        launch.programmatic != 0);
  }

  AttnjitFakeSetLauncher set_launcher_ = nullptr;
  AttnjitFakeAllocations allocations_ = nullptr;
  AttnjitFakeLaunchCount launch_count_ = nullptr;
  AttnjitFakeParamInfoPastEnd param_info_past_end_ = nullptr;
  AttnjitFakeModuleGlobal module_global_ = nullptr;
  std::optional<Sm90WatchdogRecord> expiry_;
  const simt::SimtModule* module_ = nullptr;
  int kernel_ = 0;
  std::string error_;
  std::vector<LaunchGrid> forward_grids_;
  std::vector<std::string> forward_entries_;
  std::vector<LaunchRecord> launches_;
};

EmulatedDevice& device() {
  static EmulatedDevice instance;
  return instance;
}

std::filesystem::path work_dir(const char* what) {
  static int counter = 0;
  return std::filesystem::temp_directory_path() /
         fmt::format("attnjit-dispatch-{}-{}-{}", static_cast<long>(::getpid()), what, counter++);
}

// The kernel sources the backend compiles for the fake device (its arch, the family
// ATTNJIT_KERNEL_FAMILY selects), in one emulated module.
std::unique_ptr<simt::SimtModule> emulated_module(const std::vector<KernelCase>& cases) {
  const codegen::Target target = arch_target(nvrtc::device_arch(cuda::current_device().sm));
  std::vector<std::string> sources;
  for (const KernelCase& c : cases) {
    const PreparedCase prepared(c);
    sources.push_back(codegen::generate_kernel_source(prepared.mask, prepared.score, c.dtype,
                                                      c.head_dim, target)
                          .source);
  }
  return std::make_unique<simt::SimtModule>(sources, work_dir("module"));
}

void check_through_backend(const std::vector<KernelCase>& cases) {
  const auto module = emulated_module(cases);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].name());
    device().use(module.get(), static_cast<int>(i));
    try {
      const CaseResult result = gpu_test::run_case(cases[i]);
      INFO(result.describe());
      CHECK(result.passed());
    } catch (const Error& error) {
      FAIL_CHECK(error.what() << "; emulator: " << device().error());
    }
  }
  device().use(nullptr, 0);
}

// A C API runtime on the cuda backend, with the cache ATTNJIT_CACHE_DIR names.
attnjit_runtime* cuda_runtime() {
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = ATTNJIT_BACKEND_CUDA;
  attnjit_runtime* runtime = nullptr;
  REQUIRE(attnjit_runtime_create(&runtime, &options) == ATTNJIT_OK);
  return runtime;
}

// A maskless variant for the case's dtype and head dim, through the C API.
attnjit_variant* maskless_c_variant(attnjit_runtime* runtime, const KernelCase& c) {
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.dtype = c.dtype == DType::bf16 ? ATTNJIT_DTYPE_BF16 : ATTNJIT_DTYPE_FP16;
  desc.head_dim = c.head_dim;
  attnjit_variant* variant = nullptr;
  REQUIRE(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_OK);
  return variant;
}

// The case's variant (mask, score and scalar parameters "NAME:int|float"; no tensors), through
// the C API.
attnjit_variant* c_variant(attnjit_runtime* runtime, const KernelCase& c) {
  REQUIRE(c.tensors.empty());
  std::vector<std::string> names;
  std::vector<attnjit_param_decl> params;
  for (const std::string& decl : c.params) names.push_back(decl.substr(0, decl.find(':')));
  for (std::size_t i = 0; i < c.params.size(); ++i) {
    const bool is_int = c.params[i].ends_with(":int");
    params.push_back({names[i].c_str(), is_int ? ATTNJIT_PARAM_INT : ATTNJIT_PARAM_FLOAT});
  }
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = c.mask.c_str();
  desc.score = c.score.c_str();
  desc.params = params.data();
  desc.num_params = static_cast<int>(params.size());
  desc.dtype = c.dtype == DType::bf16 ? ATTNJIT_DTYPE_BF16 : ATTNJIT_DTYPE_FP16;
  desc.head_dim = c.head_dim;
  attnjit_variant* variant = nullptr;
  REQUIRE(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_OK);
  return variant;
}

// A case's inputs in the fake device's memory, and the attnjit_forward_args that pass them.
struct DeviceCall {
  explicit DeviceCall(const KernelCase& c) : prepared(c) {
    reference::HostProblem& problem = prepared.problem;
    auto upload = [](const void* data, std::size_t size) {
      auto buffer = std::make_unique<cuda::DeviceBuffer>(size);
      buffer->upload({static_cast<const std::byte*>(data), size});
      return buffer;
    };
    q = upload(problem.q.data(), problem.q.storage_bytes());
    k = upload(problem.k.data(), problem.k.storage_bytes());
    v = upload(problem.v.data(), problem.v.storage_bytes());
    out = upload(problem.out.data(), problem.out.storage_bytes());
    lse = upload(problem.lse.data(), problem.lse.size() * sizeof(float));
    attnjit_forward_args_init(&args);
    args.q = q->get();
    args.k = k->get();
    args.v = v->get();
    args.out = out->get();
    args.lse = static_cast<float*>(lse->get());
    args.q_dtype = args.k_dtype = args.v_dtype =
        c.dtype == DType::bf16 ? ATTNJIT_DTYPE_BF16 : ATTNJIT_DTYPE_FP16;
    args.batch = c.shape.batch;
    args.num_heads_q = c.shape.num_heads_q;
    args.num_heads_kv = c.shape.num_heads_kv;
    args.q_len = c.shape.q_len;
    args.kv_len = c.shape.kv_len;
    args.layout = c.layout == Layout::bhld ? ATTNJIT_LAYOUT_BHLD : ATTNJIT_LAYOUT_BLHD;
    for (const std::int32_t bits : c.scalars) scalars.push_back({.i = bits});
    args.params = scalars.data();
    args.num_params = static_cast<int>(scalars.size());
  }
  DeviceCall(const DeviceCall&) = delete;
  DeviceCall& operator=(const DeviceCall&) = delete;

  // The results against the reference, after a forward call.
  CaseResult check() {
    reference::HostProblem& problem = prepared.problem;
    out->download({static_cast<std::byte*>(problem.out.data()), problem.out.storage_bytes()});
    lse->download({reinterpret_cast<std::byte*>(problem.lse.data()), problem.lse.size() * 4});
    return prepared.check(problem.lse);
  }

  PreparedCase prepared;
  std::unique_ptr<cuda::DeviceBuffer> q, k, v, out, lse;
  std::vector<attnjit_scalar> scalars;
  attnjit_forward_args args;
};

attnjit_launch_plan launch_plan(attnjit_variant* variant, const attnjit_forward_args& args) {
  attnjit_launch_plan plan;
  attnjit_launch_plan_init(&plan);
  const attnjit_status status = attnjit_variant_launch_plan(&plan, variant, &args);
  INFO(attnjit_last_error());
  REQUIRE(status == ATTNJIT_OK);
  return plan;
}

// A case through `variant` (maskless_c_variant, c_variant): device copies of its inputs,
// attnjit_forward with its parameters, the result against the reference. The call's launch
// plan, asked for first, must name the launch forward makes.
CaseResult run_variant_through_c_api(attnjit_variant* variant, const KernelCase& c) {
  DeviceCall call(c);
  const attnjit_launch_plan plan = launch_plan(variant, call.args);
  const std::size_t launches = device().forward_grids().size();
  const attnjit_status status = attnjit_forward(variant, &call.args);
  INFO(attnjit_last_error() << "; emulator: " << device().error());
  REQUIRE(status == ATTNJIT_OK);
  REQUIRE(device().forward_grids().size() == launches + 1);
  const LaunchGrid& launched = device().forward_grids().back();
  INFO("plan: " << plan.kernel_family << " " << plan.kernel << ": " << plan.reason);
  CHECK(device().forward_entries().back() == plan.entry);
  CHECK(launched.grid_x == plan.grid_x);
  CHECK(launched.grid_y == plan.grid_y);
  CHECK(launched.threads == plan.threads);
  CHECK(launched.smem_bytes == plan.dynamic_smem_bytes);
  return call.check();
}

// The same with a variant made for the call and destroyed after it.
CaseResult run_through_c_api(attnjit_runtime* runtime, const KernelCase& c) {
  attnjit_variant* variant = maskless_c_variant(runtime, c);
  const CaseResult result = run_variant_through_c_api(variant, c);
  attnjit_variant_destroy(variant);
  return result;
}

// The sm90 kernel with a 1 s mbarrier watchdog, compiled into a cache of its own (where the fake
// driver finds the cubins' sources).
struct WatchdogSetting {
  explicit WatchdogSetting(const char* cache_name)
      : family("ATTNJIT_KERNEL_FAMILY", "sm90"),
        tuning("ATTNJIT_TUNE", "sm90_watchdog_ms=1000"),
        cache("ATTNJIT_CACHE_DIR", work_dir(cache_name).c_str()) {}
  test::ScopedEnv family, tuning, cache;
};

KernelCase watchdog_case() {
  KernelCase causal;
  causal.mask = "q_idx >= kv_idx";
  causal.shape = shape(1, 2, 1, 150, 150);
  return causal;
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

TEST_CASE("fake device: the persistent sm90 kernel launches one block per SM and at most one "
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

TEST_CASE("fake device: a watchdog kernel computes the reference with the watchdog's record "
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
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "sm90");
  const auto cache = work_dir("short-rows-cache");
  const test::ScopedEnv cache_dir("ATTNJIT_CACHE_DIR", cache.c_str());
  attnjit_runtime* runtime = cuda_runtime();

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
  attnjit_runtime_destroy(runtime);
  std::error_code ignored;
  std::filesystem::remove_all(cache, ignored);
}

TEST_CASE("fake device: a call's launch plan names the kernel that runs it and why",
          "[dispatch][sm90]") {
  if (cuda::current_device().sm != 90) return;
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "sm90");
  const auto cache = work_dir("launch-plan-cache");
  const test::ScopedEnv cache_dir("ATTNJIT_CACHE_DIR", cache.c_str());
  attnjit_runtime* runtime = cuda_runtime();
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
  attnjit_runtime_destroy(runtime);
  std::error_code ignored;
  std::filesystem::remove_all(cache, ignored);
}

TEST_CASE("fake device: the backend's launches compute the reference", "[dispatch]") {
  std::vector<KernelCase> cases;
  for (const KernelCase& c : mask_families(shape(1, 2, 1, 70, 150))) {
    cases.push_back(c);
    cases.push_back(with(c, DType::fp16, Layout::blhd, 128));
  }
  check_through_backend(cases);
}

TEST_CASE("fake device: GQA, padding, lse off, managed memory and streams", "[dispatch]") {
  KernelCase gqa;
  gqa.mask = "q_idx >= kv_idx";
  gqa.score = "score + float(h % 3)";
  gqa.shape = shape(2, 4, 2, 40, 90);
  KernelCase padded = gqa;
  padded.row_padding = 8;
  padded.with_lse = false;
  padded.scale = 0.3f;
  padded.layout = Layout::blhd;
  KernelCase managed = gqa;
  managed.managed = true;
  managed.head_dim = 256;
  cuda::Stream stream;
  KernelCase streamed = gqa;
  streamed.stream = stream.get();
  streamed.head_dim = 32;
  check_through_backend({gqa, padded, managed, streamed});
}

// The entries of the last `count` launches, oldest first, a programmatic one marked
// "(overlaps)" (overlapped).
std::vector<std::string> last_launches(std::size_t count) {
  const auto& all = device().launches();
  REQUIRE(all.size() >= count);
  std::vector<std::string> entries;
  for (std::size_t i = all.size() - count; i < all.size(); ++i) {
    entries.push_back(all[i].programmatic ? all[i].function + " (overlaps)" : all[i].function);
  }
  return entries;
}

// How `function` appears in last_launches when the backend launches it after another kernel of
// the call: programmatic on sm_90 and later (overlap_launches), plain below.
std::string overlapped(const std::string& function) {
  return cuda::current_device().sm >= 90 ? function + " (overlaps)" : function;
}

TEST_CASE("fake device: a mask reading a tensor launches its summary first", "[dispatch]") {
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(300, 4, false, 9)};
  doc.shape = shape(1, 1, 1, 300, 300);
  KernelCase plain;
  plain.mask = "q_idx >= kv_idx";
  plain.shape = doc.shape;
  const int before = device().launch_count();
  check_through_backend({doc});
  // Two summaries (doc read at q_idx and at kv_idx), then the forward kernel; on sm_90 each
  // after the first overlaps the one before (programmatic dependent launch), and the emulator
  // checked that neither read the kernel before's results ahead of its griddepcontrol.wait.
  CHECK(device().launch_count() - before == 3);
  CHECK(last_launches(3) == std::vector<std::string>{codegen::kSummaryEntry,
                                                     overlapped(codegen::kSummaryEntry),
                                                     overlapped(codegen::kForwardEntry)});
  const int middle = device().launch_count();
  check_through_backend({plain});
  CHECK(device().launch_count() - middle == 1);
  CHECK(last_launches(1) == std::vector<std::string>{codegen::kForwardEntry});

  // Captured into a graph (run_case: one plain call, the capture, two replays): the replays'
  // launches are plain, since programmatic ones are never made during a capture.
  KernelCase captured = doc;
  captured.graph = KernelCase::Graph::after_plain_call;
  check_through_backend({captured});
  CHECK(last_launches(3) == std::vector<std::string>{codegen::kSummaryEntry, codegen::kSummaryEntry,
                                                     codegen::kForwardEntry});

  // ATTNJIT_PDL=off: every launch waits for the one before, as on sm_80.
  const test::ScopedEnv off("ATTNJIT_PDL", "off");
  check_through_backend({doc});
  CHECK(last_launches(3) == std::vector<std::string>{codegen::kSummaryEntry, codegen::kSummaryEntry,
                                                     codegen::kForwardEntry});
}

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
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "sm90");
  const auto cache = work_dir("sm90-decode-cache");
  const test::ScopedEnv cache_dir("ATTNJIT_CACHE_DIR", cache.c_str());
  attnjit_runtime* runtime = cuda_runtime();

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
  attnjit_runtime_destroy(runtime);
  std::error_code ignored;
  std::filesystem::remove_all(cache, ignored);
}

TEST_CASE("fake device: the parameter check never asks past a kernel's last parameter",
          "[dispatch]") {
  // A document mask loads both kernels: the forward (1 parameter) and the summary (6).
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(90, 3, true, 1)};
  doc.shape = shape(1, 1, 1, 90, 90);
  const int launches_before = device().launch_count();
  check_through_backend({doc});
  CHECK(device().launch_count() >= launches_before + 2);
  CHECK(device().param_info_past_end() == 0);
}

TEST_CASE("fake device: the C API's cuda backend", "[dispatch]") {
  const auto cache = work_dir("cache");
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = ATTNJIT_BACKEND_CUDA;
  const std::string cache_dir = cache.string();
  options.cache_dir = cache_dir.c_str();
  attnjit_runtime* runtime = nullptr;
  REQUIRE(attnjit_runtime_create(&runtime, &options) == ATTNJIT_OK);
  CHECK(attnjit_runtime_backend(runtime) == ATTNJIT_BACKEND_CUDA);

  KernelCase c;
  c.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  c.params = {"W:int"};
  c.scalars = {33};
  c.shape = shape(1, 2, 2, 100, 100);
  const auto module = emulated_module({c});
  device().use(module.get(), 0);

  const attnjit_param_decl param{"W", ATTNJIT_PARAM_INT};
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = c.mask.c_str();
  desc.params = &param;
  desc.num_params = 1;
  desc.dtype = ATTNJIT_DTYPE_BF16;
  desc.head_dim = 64;
  attnjit_variant* variant = nullptr;
  REQUIRE(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_OK);

  PreparedCase prepared(c);
  reference::HostProblem& problem = prepared.problem;
  cuda::DeviceBuffer q(problem.q.storage_bytes()), k(problem.k.storage_bytes()),
      v(problem.v.storage_bytes()), out(problem.out.storage_bytes()),
      lse(problem.lse.size() * sizeof(float));
  auto bytes = [](const void* data, std::size_t size) {
    return std::span<const std::byte>(static_cast<const std::byte*>(data), size);
  };
  q.upload(bytes(problem.q.data(), problem.q.storage_bytes()));
  k.upload(bytes(problem.k.data(), problem.k.storage_bytes()));
  v.upload(bytes(problem.v.data(), problem.v.storage_bytes()));
  out.upload(bytes(problem.out.data(), problem.out.storage_bytes()));
  lse.upload(bytes(problem.lse.data(), problem.lse.size() * sizeof(float)));

  attnjit_forward_args args;
  attnjit_forward_args_init(&args);
  args.q = q.get();
  args.k = k.get();
  args.v = v.get();
  args.out = out.get();
  args.lse = static_cast<float*>(lse.get());
  args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_BF16;
  args.batch = 1;
  args.num_heads_q = args.num_heads_kv = 2;
  args.q_len = args.kv_len = 100;
  args.layout = ATTNJIT_LAYOUT_BHLD;
  attnjit_scalar window;
  window.i = 33;
  args.params = &window;
  args.num_params = 1;
  const attnjit_status forwarded = attnjit_forward(variant, &args);
  INFO(attnjit_last_error() << "; emulator: " << device().error());
  REQUIRE(forwarded == ATTNJIT_OK);

  out.download({static_cast<std::byte*>(problem.out.data()), problem.out.storage_bytes()});
  lse.download({reinterpret_cast<std::byte*>(problem.lse.data()), problem.lse.size() * 4});
  const CaseResult result = prepared.check(problem.lse);
  INFO(result.describe());
  CHECK(result.passed());

  SECTION("a host pointer is a status code with the reason") {
    std::vector<std::uint16_t> host(problem.q.storage_elements());
    args.q = host.data();
    CHECK(attnjit_forward(variant, &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(attnjit_last_error(), Catch::Contains("query pointer") &&
                                         Catch::Contains("not device memory"));
  }
  SECTION("inputs of another dtype than the variant's are refused") {
    args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_FP32;
    CHECK(attnjit_forward(variant, &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(attnjit_last_error(), Catch::Contains("declared for bfloat16 inputs; got query, "
                                                     "key and value of float32"));
  }
  device().use(nullptr, 0);
  attnjit_variant_destroy(variant);
  attnjit_runtime_destroy(runtime);
  std::error_code ignored;
  std::filesystem::remove_all(cache, ignored);
}

TEST_CASE("a device below compute capability 8.0 is refused with the reason", "[cc75]") {
  const Error e = test::capture_error([] { cuda::current_device(); });
  CHECK(e.status() == Status::unsupported);
  CHECK_THAT(e.what(), Catch::Contains("attention kernels need compute capability 8.0 or newer; "
                                       "device 0 is 7.5"));

  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = ATTNJIT_BACKEND_CUDA;
  attnjit_runtime* runtime = nullptr;
  CHECK(attnjit_runtime_create(&runtime, &options) == ATTNJIT_ERROR_UNSUPPORTED);
  CHECK_THAT(attnjit_last_error(), Catch::Contains("7.5"));

  options.backend = ATTNJIT_BACKEND_AUTO;
  REQUIRE(attnjit_runtime_create(&runtime, &options) == ATTNJIT_OK);
  CHECK(attnjit_runtime_backend(runtime) == ATTNJIT_BACKEND_CPU);
  attnjit_runtime_destroy(runtime);
}
