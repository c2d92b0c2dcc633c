// The C API's cuda backend on the fake device, and a device below compute capability 8.0.

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "attnjit/attnjit.h"
#include "common/error.hpp"
#include "dispatch_support.hpp"
#include "jit/kernel_cache.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_memory.hpp"
#include "support/capture_error.hpp"
#include "support/case_tables.hpp"

using namespace attnjit;
using namespace attnjit::dispatch_test;
using namespace attnjit::kernel_test;

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
    CHECK_THAT(attnjit_last_error(),
               Catch::Contains("query pointer") && Catch::Contains("not device memory"));
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

// A paged key/value cache through the C API on the (sm_90a) fake device: the table and pools
// checked as device memory, the call planned and run on the variant's paged kernel: the sm80
// family's for a decoding step (packed) and for pages of 12 rows, the sm90 family's for a
// prefill in pages of 16 or 40; and the same call's dense kernel refused.
TEST_CASE("fake device: paged caches run on the paged kernel through the C API", "[dispatch]") {
  const auto cache = work_dir("paged-cache");
  const test::ScopedEnv cache_dir("ATTNJIT_CACHE_DIR", cache.c_str());
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "auto");  // as users get it
  attnjit_runtime* runtime = cuda_runtime();
  const std::vector<KernelCase> all = paged_kv_cases();
  const KernelCase prefill = sm90_paged_kv_cases()[0];
  KernelCase small_pages = prefill;
  small_pages.page_size = 12;  // not a multiple of the sm90 kernel's 8-row boxes
  KernelCase odd_pages = prefill;
  odd_pages.page_size = 40;  // boxes of 8 rows, five a page
  struct Expected {
    KernelCase c;
    codegen::FamilyRequest family;
    const char* why;
  };
  // Note: [dispatch] runs on the fake sm_90a device and again on an sm_86 one, where every paged
  // call takes the sm80 kernel.
  const bool hopper = cuda::current_device().sm == 90;
  constexpr auto sm80 = codegen::FamilyRequest::sm80;
  const std::vector<Expected> cases = {
      {all[0], sm80, hopper ? "a decoding step" : "the sm80 kernel for"},  // pages of 16
      {prefill, hopper ? codegen::FamilyRequest::sm90 : sm80,
       hopper ? "the sm90 kernel" : "the sm80 kernel for"},  // pages of 16
      {odd_pages, hopper ? codegen::FamilyRequest::sm90 : sm80,
       hopper ? "pages of 40 rows): the sm90 kernel" : "the sm80 kernel for"},
      {small_pages, sm80,
       hopper ? "pages of 12 rows: its boxes of keys and values need pages of a multiple of 8 rows"
              : "the sm80 kernel for"},
  };
  for (const Expected& expected : cases) {
    INFO(expected.c.name());
    const auto module = emulated_module({expected.c}, expected.family);
    device().use(module.get(), 0);
    attnjit_variant* variant = c_variant(runtime, expected.c);
    DeviceCall call(expected.c);
    const attnjit_launch_plan plan = launch_plan(variant, call.args);
    CHECK(std::string(plan.kernel) == "paged_kv");
    CHECK(std::string(plan.kernel_family) ==
          (expected.family == codegen::FamilyRequest::sm90 ? "sm90" : "sm80"));
    CHECK_THAT(plan.reason, Catch::Contains("pages of") && Catch::Contains(expected.why));
    const CaseResult result = run_variant_through_c_api(variant, expected.c);
    INFO(result.describe() << "; emulator: " << device().error());
    CHECK(result.passed());
    attnjit_variant_destroy(variant);
    device().use(nullptr, 0);
  }

  // A page table in host memory is refused before anything runs, with its name.
  attnjit_variant* variant = c_variant(runtime, all[0]);
  DeviceCall call(all[0]);
  const std::vector<std::int32_t> host_table(call.prepared.paged->table);
  call.args.kv_page_table = host_table.data();
  CHECK(attnjit_forward(variant, &call.args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(attnjit_last_error(), Catch::Contains("kv_page_table"));
  attnjit_variant_destroy(variant);
  attnjit_runtime_destroy(runtime);
}

// Variable-length sequences through the C API on the fake device (sm_90a, and sm_86 in the
// second run): the tables checked as device memory, the call planned and run on a kernel with the
// tables (on sm_90a the sm90 family's, but for decoding steps with key counts alone), packed
// queries on the forward entry.
TEST_CASE("fake device: variable-length sequences run on the kernel with the tables",
          "[dispatch]") {
  const auto cache = work_dir("varlen");
  const test::ScopedEnv cache_dir("ATTNJIT_CACHE_DIR", cache.c_str());
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "auto");  // as users get it
  attnjit_runtime* runtime = cuda_runtime();
  const std::vector<KernelCase> all = varlen_cases();
  // Packed queries and keys (without the tensor: c_variant declares none); packed queries over a
  // paged cache; a split decoding step over a paged cache with per-sequence key counts (its
  // slices balanced over them).
  KernelCase chunks = all[0];
  chunks.mask = "kv_idx <= q_idx + kv_len - q_len";
  chunks.tensors.clear();
  const bool hopper = cuda::current_device().sm >= 90;
  for (const KernelCase& c : {chunks, all[2], all[3]}) {
    INFO(c.name());
    const bool sm90 = hopper && c.sequences->pack_queries;
    const auto module =
        emulated_module({c}, sm90 ? codegen::FamilyRequest::sm90 : codegen::FamilyRequest::sm80);
    device().use(module.get(), 0);
    attnjit_variant* variant = c_variant(runtime, c);
    DeviceCall call(c);
    const attnjit_launch_plan plan = launch_plan(variant, call.args);
    CHECK(std::string(plan.kernel) == "varlen");
    CHECK(std::string(plan.kernel_family) == (sm90 ? "sm90" : "sm80"));
    CHECK_THAT(plan.reason, Catch::Contains("variable-length sequences"));
    if (c.sequences->pack_queries) CHECK(std::string(plan.entry) == codegen::kForwardEntry);
    if (!c.sequences->pack_queries && c.split_kv) {
      // The decoding step, split by the heuristic for the fake's SMs, in balanced slices (no
      // fixed size). The whole reason names the entry, the packing and the split.
      CHECK(plan.num_splits > 1);
      CHECK(plan.split_tiles == 0);
      const std::string reason = launch_reason(variant, call.args);
      CHECK_THAT(reason, Catch::Contains("the decoding entry") &&
                             Catch::Contains("query heads packed") &&
                             Catch::Contains("slices a sequence on average, sized to its key"));
    }
    const CaseResult result = run_variant_through_c_api(variant, c);
    INFO(result.describe() << "; emulator: " << device().error());
    CHECK(result.passed());
    attnjit_variant_destroy(variant);
    device().use(nullptr, 0);
  }
  // Tables in host memory are refused before anything runs, with their names.
  attnjit_variant* variant = c_variant(runtime, chunks);
  DeviceCall call(chunks);
  const std::vector<std::int32_t> host_starts(call.prepared.packed->q_starts);
  call.args.q_seq_starts = host_starts.data();
  CHECK(attnjit_forward(variant, &call.args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(attnjit_last_error(), Catch::Contains("q_seq_starts"));
  attnjit_variant_destroy(variant);
  attnjit_runtime_destroy(runtime);
}

// A tuning of persistent blocks makes the sm90 family's kernel of paged calls one that does not
// read sequence tables (codegen::reads_sequence_tables): variable-length calls then run on the
// sm80 family's kernel, and say why.
TEST_CASE(
    "fake device: with persistent blocks tuned, variable-length sequences run on the sm80 "
    "kernel",
    "[dispatch]") {
  if (cuda::current_device().sm != 90) return;  // the sm_86 run: the sm80 kernel takes every call
  const auto cache = work_dir("varlen-persistent");
  const test::ScopedEnv cache_dir("ATTNJIT_CACHE_DIR", cache.c_str());
  const test::ScopedEnv family("ATTNJIT_KERNEL_FAMILY", "auto");
  const test::ScopedEnv tune("ATTNJIT_TUNE", "sm90_persistent=1");
  attnjit_runtime* runtime = cuda_runtime();
  KernelCase c = varlen_cases()[0];  // packed queries and keys: the sm90 kernel's otherwise
  c.mask = "kv_idx <= q_idx + kv_len - q_len";
  c.tensors.clear();
  REQUIRE(c.sequences->pack_queries);
  const auto module = emulated_module({c}, codegen::FamilyRequest::sm80);
  device().use(module.get(), 0);
  attnjit_variant* variant = c_variant(runtime, c);
  DeviceCall call(c);
  const attnjit_launch_plan plan = launch_plan(variant, call.args);
  CHECK(std::string(plan.kernel) == "varlen");
  CHECK(std::string(plan.kernel_family) == "sm80");
  CHECK_THAT(plan.reason, Catch::Contains("do not read sequence tables"));
  const CaseResult result = run_variant_through_c_api(variant, c);
  INFO(result.describe() << "; emulator: " << device().error());
  CHECK(result.passed());
  attnjit_variant_destroy(variant);
  device().use(nullptr, 0);
  attnjit_runtime_destroy(runtime);
}

// The backend refuses a kernel that does not match the call's cache (a dense kernel would read
// the pools as one sequence each, a paged one read through a null table): an internal error,
// before anything is checked on the device or launched.
TEST_CASE("fake device: a paged call on a dense kernel or the reverse is an internal error",
          "[dispatch]") {
  const auto cache_root = work_dir("paged-mismatch");
  KernelCache cache{cache_root};
  const KernelCase c = paged_kv_cases()[0];
  PreparedCase prepared(c);
  const auto dense = acquire_variant(prepared.spec, "sm_80", cache).binary;
  const auto paged =
      acquire_variant(prepared.spec, parse_variant(prepared.spec), "sm_80", cache,
                      /*ptx=*/false, codegen::FamilyRequest::sm80, codegen::Schedule::paged_kv)
          .binary;
  REQUIRE(paged->config.paged_kv);
  REQUIRE_FALSE(dense->config.paged_kv);
  const auto status_of = [&](const KernelBinary& kernel, const AttentionBuffers& buffers) {
    try {
      cuda::forward(kernel, prepared.mask, prepared.host_args, prepared.shape, buffers,
                    /*hooks_use_heads=*/false, LaunchChoices{}, nullptr);
    } catch (const Error& e) {
      INFO(e.what());
      CHECK_THAT(e.what(), Catch::Contains("paged key/value cache"));
      return e.status();
    }
    return Status::ok;
  };
  CHECK(status_of(*dense, prepared.call_buffers()) == Status::internal);
  CHECK(status_of(*paged, prepared.problem.buffers()) == Status::internal);
}
