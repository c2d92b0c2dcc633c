#include "dispatch_support.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "codegen/variant_source.hpp"
#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "gpu_harness.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/runtime.hpp"
#include "support/case_tables.hpp"

namespace attnjit::dispatch_test {

using namespace kernel_test;

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

}  // namespace

std::filesystem::path work_dir(const char* what) {
  static int counter = 0;
  return std::filesystem::temp_directory_path() /
         fmt::format("attnjit-dispatch-{}-{}-{}", static_cast<long>(::getpid()), what, counter++);
}

std::unique_ptr<simt::SimtModule> emulated_module(const std::vector<KernelCase>& cases,
                                                  codegen::FamilyRequest paged_family) {
  const codegen::Target target = arch_target(nvrtc::device_arch(cuda::current_device().sm));
  std::vector<std::string> sources;
  for (const KernelCase& c : cases) {
    const PreparedCase prepared(c);
    // Note: a paged case runs on the variant's paged kernel, as the backend's calls do, and so
    // does a case with sequence tables.
    sources.push_back(c.page_size > 0 || c.sequences
                          ? codegen::generate_paged_kernel_source(
                                prepared.mask, prepared.score, c.dtype, c.head_dim, target,
                                paged_family, codegen::kernel_tuning_from_environment())
                                .source
                          : codegen::generate_kernel_source(prepared.mask, prepared.score, c.dtype,
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

attnjit_runtime* cuda_runtime() {
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = ATTNJIT_BACKEND_CUDA;
  attnjit_runtime* runtime = nullptr;
  REQUIRE(attnjit_runtime_create(&runtime, &options) == ATTNJIT_OK);
  return runtime;
}

Sm90CudaRuntime::Sm90CudaRuntime(const char* cache_name)
    : family("ATTNJIT_KERNEL_FAMILY", "sm90"),
      cache(work_dir(cache_name)),
      cache_dir("ATTNJIT_CACHE_DIR", cache.c_str()),
      runtime(cuda_runtime()) {}

Sm90CudaRuntime::~Sm90CudaRuntime() {
  attnjit_runtime_destroy(runtime);
  std::error_code ignored;
  std::filesystem::remove_all(cache, ignored);
}

attnjit_variant* maskless_c_variant(attnjit_runtime* runtime, const KernelCase& c) {
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.dtype = c.dtype == DType::bf16 ? ATTNJIT_DTYPE_BF16 : ATTNJIT_DTYPE_FP16;
  desc.head_dim = c.head_dim;
  attnjit_variant* variant = nullptr;
  REQUIRE(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_OK);
  return variant;
}

attnjit_variant* c_variant(attnjit_runtime* runtime, const KernelCase& c) {
  std::vector<std::string> names;
  std::vector<attnjit_param_decl> params;
  for (const std::string& decl : c.params) names.push_back(decl.substr(0, decl.find(':')));
  for (std::size_t i = 0; i < c.params.size(); ++i) {
    const bool is_int = c.params[i].ends_with(":int");
    params.push_back({names[i].c_str(), is_int ? ATTNJIT_PARAM_INT : ATTNJIT_PARAM_FLOAT});
  }
  // Tensors "NAME:int32[1]", "NAME:float32[2]".
  std::vector<std::string> tensor_names;
  std::vector<attnjit_tensor_decl> tensors;
  for (const TensorInput& tensor : c.tensors) {
    tensor_names.push_back(tensor.decl.substr(0, tensor.decl.find(':')));
  }
  for (std::size_t i = 0; i < c.tensors.size(); ++i) {
    const std::string& decl = c.tensors[i].decl;
    const bool is_int = decl.find(":int32[") != std::string::npos;
    const int rank = decl.ends_with("[2]") ? 2 : 1;
    tensors.push_back(
        {tensor_names[i].c_str(), is_int ? ATTNJIT_TENSOR_INT32 : ATTNJIT_TENSOR_FLOAT32, rank});
  }
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = c.mask.c_str();
  desc.score = c.score.c_str();
  desc.params = params.data();
  desc.num_params = static_cast<int>(params.size());
  desc.tensors = tensors.data();
  desc.num_tensors = static_cast<int>(tensors.size());
  desc.dtype = c.dtype == DType::bf16 ? ATTNJIT_DTYPE_BF16 : ATTNJIT_DTYPE_FP16;
  desc.head_dim = c.head_dim;
  attnjit_variant* variant = nullptr;
  REQUIRE(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_OK);
  return variant;
}

DeviceCall::DeviceCall(const KernelCase& c) : prepared(c) {
  reference::HostProblem& problem = prepared.problem;
  auto upload = [](const void* data, std::size_t size) {
    auto buffer = std::make_unique<cuda::DeviceBuffer>(size);
    buffer->upload({static_cast<const std::byte*>(data), size});
    return buffer;
  };
  // A case's packed sequences in place of its padded queries (and keys), a paged case's pools and
  // table in place of the dense keys and values.
  const PackedSequences* packed = prepared.packed.get();
  const bool packed_queries = packed != nullptr && packed->options.pack_queries;
  const bool packed_keys = packed != nullptr && packed->options.pack_keys;
  const reference::HostTensor& q_host = packed_queries ? packed->q : problem.q;
  const reference::HostTensor& out_host = packed_queries ? packed->out : problem.out;
  const std::vector<float>& lse_host = packed_queries ? packed->lse : problem.lse;
  q = upload(q_host.data(), q_host.storage_bytes());
  if (const PagedCache* paged = prepared.paged.get()) {
    k = upload(paged->k_pool.data(), paged->k_pool.storage_bytes());
    v = upload(paged->v_pool.data(), paged->v_pool.storage_bytes());
    page_table = upload(paged->table.data(), paged->table.size() * sizeof(std::int32_t));
  } else if (packed_keys) {
    k = upload(packed->k.data(), packed->k.storage_bytes());
    v = upload(packed->v.data(), packed->v.storage_bytes());
  } else {
    k = upload(problem.k.data(), problem.k.storage_bytes());
    v = upload(problem.v.data(), problem.v.storage_bytes());
  }
  out = upload(out_host.data(), out_host.storage_bytes());
  lse = upload(lse_host.data(), lse_host.size() * sizeof(float));
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
  if (const PagedCache* paged = prepared.paged.get()) {
    args.kv_page_table = static_cast<const std::int32_t*>(page_table->get());
    args.kv_page_table_width = paged->pages.table_width;
    args.kv_page_size = paged->pages.page_size;
    args.kv_num_pages = paged->pages.num_pages;
  }
  if (packed != nullptr) {
    const auto table = [&](const std::vector<std::int32_t>& host) {
      return upload(host.data(), host.size() * sizeof(std::int32_t));
    };
    if (packed_queries) {
      q_starts = table(packed->q_starts);
      args.q_seq_starts = static_cast<const std::int32_t*>(q_starts->get());
      args.q_total = packed->q_total;
    }
    if (packed_keys) {
      kv_starts = table(packed->kv_starts);
      args.kv_seq_starts = static_cast<const std::int32_t*>(kv_starts->get());
      args.kv_total = packed->kv_total;
    } else {
      kv_lens = table(packed->kv_lens);
      args.kv_seq_lens = static_cast<const std::int32_t*>(kv_lens->get());
    }
  }
  for (const std::int32_t bits : c.scalars) scalars.push_back({.i = bits});
  args.params = scalars.data();
  args.num_params = static_cast<int>(scalars.size());
  for (const TensorInput& tensor : c.tensors) {
    tensors.push_back(tensor.ints.empty()
                          ? upload(tensor.floats.data(), tensor.floats.size() * sizeof(float))
                          : upload(tensor.ints.data(), tensor.ints.size() * sizeof(std::int32_t)));
    tensor_args.push_back({tensors.back()->get(), {tensor.dims[0], tensor.dims[1]}});
  }
  args.tensors = tensor_args.data();
  args.num_tensors = static_cast<int>(tensor_args.size());
}

CaseResult DeviceCall::check() {
  reference::HostProblem& problem = prepared.problem;
  PackedSequences* packed = prepared.packed.get();
  const bool packed_queries = packed != nullptr && packed->options.pack_queries;
  reference::HostTensor& out_host = packed_queries ? packed->out : problem.out;
  std::vector<float>& lse_host = packed_queries ? packed->lse : problem.lse;
  out->download({static_cast<std::byte*>(out_host.data()), out_host.storage_bytes()});
  lse->download({reinterpret_cast<std::byte*>(lse_host.data()), lse_host.size() * 4});
  return prepared.check(lse_host);
}

attnjit_launch_plan launch_plan(attnjit_variant* variant, const attnjit_forward_args& args) {
  attnjit_launch_plan plan;
  attnjit_launch_plan_init(&plan);
  const attnjit_status status = attnjit_variant_launch_plan(&plan, variant, &args);
  INFO(attnjit_last_error());
  REQUIRE(status == ATTNJIT_OK);
  return plan;
}

std::string launch_reason(attnjit_variant* variant, const attnjit_forward_args& args) {
  std::size_t length = 0;
  REQUIRE(attnjit_variant_launch_reason(nullptr, 0, &length, variant, &args) ==
          ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(attnjit_last_error(), Catch::Contains("bytes with its NUL"));
  REQUIRE(length > 0);
  std::string short_buffer(length, '#');
  CHECK(attnjit_variant_launch_reason(short_buffer.data(), length, &length, variant, &args) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(short_buffer == std::string(length, '#'));
  std::string reason(length + 1, '#');
  const attnjit_status status =
      attnjit_variant_launch_reason(reason.data(), reason.size(), &length, variant, &args);
  INFO(attnjit_last_error());
  REQUIRE(status == ATTNJIT_OK);
  REQUIRE(reason.back() == '\0');
  reason.pop_back();
  CHECK(reason.size() == length);
  const attnjit_launch_plan plan = launch_plan(variant, args);
  const std::size_t fits = sizeof(plan.reason) - 1;
  CHECK(std::string(plan.reason) ==
        (reason.size() <= fits ? reason : reason.substr(0, fits - 3) + "..."));
  return reason;
}

CaseResult run_variant_through_c_api(attnjit_variant* variant, const KernelCase& c) {
  DeviceCall call(c);
  launch_reason(variant, call.args);
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

CaseResult run_through_c_api(attnjit_runtime* runtime, const KernelCase& c) {
  attnjit_variant* variant = maskless_c_variant(runtime, c);
  const CaseResult result = run_variant_through_c_api(variant, c);
  attnjit_variant_destroy(variant);
  return result;
}

std::vector<std::string> last_launches(std::size_t count) {
  const auto& all = device().launches();
  REQUIRE(all.size() >= count);
  std::vector<std::string> entries;
  for (std::size_t i = all.size() - count; i < all.size(); ++i) {
    entries.push_back(all[i].programmatic ? all[i].function + " (overlaps)" : all[i].function);
  }
  return entries;
}

std::string overlapped(const std::string& function) {
  return cuda::current_device().sm >= 90 ? function + " (overlaps)" : function;
}

KernelCase watchdog_case() {
  KernelCase causal;
  causal.mask = "q_idx >= kv_idx";
  causal.shape = shape(1, 2, 1, 150, 150);
  return causal;
}

}  // namespace attnjit::dispatch_test
