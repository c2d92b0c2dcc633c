#include "gpu_harness.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <span>

#include "attnjit/sm90_fwd_params.cuh"
#include "compile/nvrtc_compiler.hpp"
#include "graph_capture.hpp"
#include "jit/kernel_cache.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_memory.hpp"
#include "runtime/runtime.hpp"
#include "runtime/variant.hpp"
#include "support/scoped_env.hpp"
#include "testkit/internal/random_inputs.hpp"

namespace attnjit::gpu_test {
namespace {

std::span<const std::byte> bytes_of(const void* data, std::size_t size) {
  return {static_cast<const std::byte*>(data), size};
}

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& values) {
  return bytes_of(values.data(), values.size() * sizeof(T));
}

}  // namespace

KernelCache& test_cache() {
  // A temporary directory of this process, removed at exit (after the cache, constructed later,
  // is destroyed); $ATTNJIT_CACHE_DIR is the caller's and stays.
  struct CacheDir {
    std::filesystem::path path;
    bool temporary = false;
    ~CacheDir() {
      std::error_code ignored;
      if (temporary) std::filesystem::remove_all(path, ignored);
    }
  };
  static const CacheDir dir = []() {
    if (const char* env = std::getenv("ATTNJIT_CACHE_DIR"); env != nullptr && *env != '\0') {
      return CacheDir{env, false};
    }
    CacheDir temporary{std::filesystem::temp_directory_path() /
                           fmt::format("attnjit-gpu-test-{}", static_cast<long>(::getpid())),
                       true};
    std::filesystem::create_directories(temporary.path);
    return temporary;
  }();
  static KernelCache cache(dir.path);
  return cache;
}

// The arch attnjit compiles for on this device (sm_90a on an H100); the kernel family is the
// one ATTNJIT_KERNEL_FAMILY selects, so test_gpu runs on either family.
std::string device_arch() { return nvrtc::device_arch(cuda::current_device().sm); }

CaseResult run_case(const KernelCase& c) {
  kernel_test::PreparedCase prepared(c);
  // Note: a paged case runs on the variant's paged kernel, as the backend's calls do: the one
  // of the family ATTNJIT_KERNEL_FAMILY selects, but the sm80 kernel's for pages the sm90
  // kernel's boxes cannot tile (not a multiple of 8 rows; Variant::choose_paged_kernel).
  // A case with sequence tables runs on a kernel of paged calls too, which reads them.
  const bool small_pages = c.page_size > 0 && c.page_size % kSm90MinPagedBoxRows != 0;
  const codegen::FamilyRequest paged_family =
      small_pages ? codegen::FamilyRequest::sm80 : codegen::FamilyRequest::environment;
  const KernelBinary kernel =
      c.page_size > 0 || c.sequences
          ? *acquire_variant(prepared.spec, parse_variant(prepared.spec), device_arch(),
                             test_cache(), /*ptx=*/false, paged_family, codegen::Schedule::paged_kv)
                 .binary
          : compile_variant(prepared.spec, device_arch(), test_cache());
  reference::HostProblem& problem = prepared.problem;
  const AttentionBuffers host = prepared.call_buffers();

  // Device copies; out and lse start as NaN (the host problem poisons them, padding included).
  // A case's packed sequences in place of its padded queries, output, lse (and keys).
  kernel_test::PackedSequences* packed = prepared.packed.get();
  const bool packed_queries = packed != nullptr && packed->options.pack_queries;
  const bool packed_keys = packed != nullptr && packed->options.pack_keys;
  const reference::HostTensor& q_host = packed_queries ? packed->q : problem.q;
  reference::HostTensor& out_host = packed_queries ? packed->out : problem.out;
  const std::size_t lse_count = packed_queries ? packed->lse.size() : problem.lse.size();
  const reference::HostTensor& k_host = packed_keys ? packed->k : problem.k;
  const reference::HostTensor& v_host = packed_keys ? packed->v : problem.v;
  const cuda::MemoryKind kind = c.managed ? cuda::MemoryKind::managed : cuda::MemoryKind::device;
  cuda::DeviceBuffer q(q_host.storage_bytes(), kind), k(k_host.storage_bytes(), kind),
      v(v_host.storage_bytes(), kind), out(out_host.storage_bytes(), kind);
  q.upload(bytes_of(q_host.data(), q_host.storage_bytes()));
  k.upload(bytes_of(k_host.data(), k_host.storage_bytes()));
  v.upload(bytes_of(v_host.data(), v_host.storage_bytes()));
  std::vector<cuda::DeviceBuffer> tables;  // the sequence tables, in the order they are set
  const auto upload_table = [&](const std::vector<std::int32_t>& table) {
    tables.emplace_back(table.size() * sizeof(std::int32_t), kind);
    tables.back().upload(bytes_of(table.data(), table.size() * sizeof(std::int32_t)));
    return static_cast<const std::int32_t*>(tables.back().get());
  };
  // A paged case's pools and table in place of the dense keys and values.
  std::unique_ptr<cuda::DeviceBuffer> k_pool, v_pool, page_table;
  if (const kernel_test::PagedCache* paged = prepared.paged.get()) {
    k_pool = std::make_unique<cuda::DeviceBuffer>(paged->k_pool.storage_bytes(), kind);
    v_pool = std::make_unique<cuda::DeviceBuffer>(paged->v_pool.storage_bytes(), kind);
    page_table = std::make_unique<cuda::DeviceBuffer>(paged->table.size() * 4, kind);
    k_pool->upload(bytes_of(paged->k_pool.data(), paged->k_pool.storage_bytes()));
    v_pool->upload(bytes_of(paged->v_pool.data(), paged->v_pool.storage_bytes()));
    page_table->upload(bytes_of(paged->table.data(), paged->table.size() * 4));
  }
  out.upload(bytes_of(out_host.data(), out_host.storage_bytes()));
  std::unique_ptr<cuda::DeviceBuffer> lse;
  if (c.with_lse) {
    std::vector<float> poison(lse_count, std::numeric_limits<float>::quiet_NaN());
    lse = std::make_unique<cuda::DeviceBuffer>(poison.size() * sizeof(float), kind);
    lse->upload(bytes_of(poison));
  }

  VariantArgs device_args = prepared.host_args;
  std::vector<cuda::DeviceBuffer> tensor_buffers;
  tensor_buffers.reserve(c.tensors.size());
  for (std::size_t i = 0; i < c.tensors.size(); ++i) {
    const TensorArg& arg = prepared.host_args.tensors[i];
    const std::size_t bytes = static_cast<std::size_t>(arg.dims[0]) * arg.dims[1] * 4;
    tensor_buffers.emplace_back(bytes, kind);
    tensor_buffers.back().upload(bytes_of(arg.data, bytes));
    device_args.tensors[i].data = tensor_buffers.back().get();
  }

  AttentionBuffers device = host;
  device.q = q.get();
  device.k = k_pool ? k_pool->get() : k.get();
  device.v = v_pool ? v_pool->get() : v.get();
  if (page_table) device.kv_pages.table = static_cast<const std::int32_t*>(page_table->get());
  device.out = out.get();
  device.lse = lse ? static_cast<float*>(lse->get()) : nullptr;
  if (packed != nullptr) {
    tables.reserve(3);
    if (packed_queries) device.sequences.q_starts = upload_table(packed->q_starts);
    if (packed_keys) device.sequences.kv_starts = upload_table(packed->kv_starts);
    if (!packed_keys) device.sequences.kv_lens = upload_table(packed->kv_lens);
  }
  // The decoding switches as a variant created now would read them (a test's ScopedEnv), with
  // the case's slice count.
  LaunchChoices choices = launch_choices_from_environment();
  if (c.split_kv) choices.split_kv = c.split_kv;
  // after_prepare: the call through a Variant, which picks its kernel per call as forward does
  // for a host program, and which reads ATTNJIT_SPLIT_KV when it is created.
  std::unique_ptr<Runtime> runtime;
  std::unique_ptr<Variant> variant;
  if (c.graph == KernelCase::Graph::after_prepare) {
    const std::string split = c.split_kv ? std::to_string(*c.split_kv) : std::string();
    const test::ScopedEnv split_kv("ATTNJIT_SPLIT_KV", c.split_kv ? split.c_str() : nullptr);
    runtime =
        std::make_unique<Runtime>(RuntimeOptions{test_cache().root().string(), Backend::cuda});
    variant = std::make_unique<Variant>(*runtime, prepared.spec);
    variant->prepare();
    if (c.page_size > 0 || c.sequences) variant->prepare_paged();
  }
  const auto forward = [&](void* stream) {
    if (variant) {
      ForwardCall call;
      call.shape = prepared.shape;
      call.buffers = device;
      call.scalars = c.scalars;
      for (std::size_t i = 0; i < c.tensors.size(); ++i) {
        const TensorArg& arg = device_args.tensors[i];
        call.tensors.push_back({arg.data, {arg.dims[0], arg.dims[1]}});
      }
      call.stream = stream;
      variant->forward(call);
      return;
    }
    cuda::forward(kernel, prepared.mask, device_args, prepared.shape, device,
                  expressions_use_heads({prepared.mask, prepared.score}), choices, stream);
  };
  // The outputs back from the device, checked against the reference.
  const auto check = [&] {
    out.download({static_cast<std::byte*>(out_host.data()), out_host.storage_bytes()});
    std::vector<float> lse_result(lse_count);
    if (lse) {
      lse->download({reinterpret_cast<std::byte*>(lse_result.data()), lse_result.size() * 4});
    }
    CaseResult result = prepared.check(lse_result);
    result.origin = kernel.origin;
    return result;
  };
  if (c.graph == KernelCase::Graph::none) {
    forward(c.stream);
    cuda::synchronize_context();
    return check();
  }

  // A graph: one plain call first (it compiles and loads the kernel, which a capture must not
  // do) unless cold or after prepare, then the call captured, and two replays, the outputs poisoned
  // before each (the host problem's output is still the poisoned one it uploaded: nothing was read
  // back).
  const std::vector<float> poisoned_lse(lse_count, std::numeric_limits<float>::quiet_NaN());
  const std::vector<std::byte> poisoned_out(
      static_cast<const std::byte*>(out_host.data()),
      static_cast<const std::byte*>(out_host.data()) + out_host.storage_bytes());
  cuda::Stream stream;
  if (c.graph == KernelCase::Graph::after_plain_call) {
    forward(stream.get());
    stream.synchronize();
  }
  GraphCapture capture(stream.get());
  forward(stream.get());
  capture.end();
  CaseResult result;
  for (int replay = 0; replay < 2; ++replay) {
    out.upload(poisoned_out);
    if (lse) lse->upload(bytes_of(poisoned_lse));
    capture.launch();
    stream.synchronize();
    result = check();
    if (!result.passed()) break;
  }
  return result;
}

}  // namespace attnjit::gpu_test
