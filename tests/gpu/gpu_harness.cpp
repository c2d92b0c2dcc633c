#include "gpu_harness.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <span>

#include "cache/kernel_cache.hpp"
#include "expr/expression.hpp"
#include "expr/signature.hpp"
#include "reference/naive.hpp"
#include "reference/random_inputs.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_memory.hpp"

namespace attnjit::gpu_test {
namespace {

using reference::HostTensor;

// Elements of `tensor`'s storage outside its [batch, heads, len, head_dim] view whose bytes differ
// from `before`: the kernel wrote where it must not (row padding, past the last row).
std::int64_t writes_outside_view(const HostTensor& tensor, const std::vector<std::byte>& before,
                                 const AttentionShape& shape, int heads, int len) {
  const std::size_t element = dtype_size(tensor.dtype());
  const auto count = static_cast<std::size_t>(tensor.storage_elements());
  std::vector<bool> in_view(count, false);
  const Strides& s = tensor.strides();
  for (int b = 0; b < shape.batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      for (int row = 0; row < len; ++row) {
        const std::int64_t first = b * s.batch + h * s.head + row * s.row;
        for (int d = 0; d < shape.head_dim; ++d)
          in_view[static_cast<std::size_t>(first + d)] = true;
      }
    }
  }
  const auto* after = static_cast<const std::byte*>(tensor.data());
  std::int64_t changed = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (!in_view[i] &&
        std::memcmp(after + i * element, before.data() + i * element, element) != 0) {
      ++changed;
    }
  }
  return changed;
}

std::span<const std::byte> bytes_of(const void* data, std::size_t size) {
  return {static_cast<const std::byte*>(data), size};
}

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& values) {
  return bytes_of(values.data(), values.size() * sizeof(T));
}

}  // namespace

std::int32_t float_bits(float value) { return std::bit_cast<std::int32_t>(value); }

std::string GpuCase::name() const {
  std::string text = fmt::format("mask='{}' score='{}'", mask.empty() ? "true" : mask,
                                 score.empty() ? "score" : score);
  for (std::size_t i = 0; i < params.size() && i < scalars.size(); ++i) {
    text += fmt::format(" {}={}", params[i], scalars[i]);
  }
  for (const TensorInput& tensor : tensors) {
    text += fmt::format(" {}[{}x{}]", tensor.decl, tensor.dims[0], tensor.dims[1]);
  }
  return text + fmt::format(" {} {} D={} B={} Hq={} Hkv={} Lq={} Lkv={} pad={} lse={} seed={}",
                            dtype_name(dtype), layout == Layout::bhld ? "bhld" : "blhd", head_dim,
                            shape.batch, shape.num_heads_q, shape.num_heads_kv, shape.q_len,
                            shape.kv_len, row_padding, with_lse ? "on" : "off", seed);
}

bool CaseResult::passed() const {
  return reference::within(out, out_limit) &&
         (lse.count == 0 || reference::within(lse, lse_limit)) && padding_writes == 0;
}

std::string CaseResult::describe() const {
  return fmt::format(
      "out: {} (limit max_abs {:.1e} nmse {:.1e}); lse: {}; writes outside the "
      "output view: {}",
      reference::describe(out), out_limit.max_abs_error, out_limit.nmse,
      lse.count == 0 ? std::string("off") : reference::describe(lse), padding_writes);
}

KernelCache& test_cache() {
  static const std::filesystem::path dir = []() -> std::filesystem::path {
    if (const char* env = std::getenv("ATTNJIT_CACHE_DIR"); env != nullptr && *env != '\0') {
      return env;
    }
    auto path = std::filesystem::temp_directory_path() /
                fmt::format("attnjit-gpu-test-{}", static_cast<long>(::getpid()));
    std::filesystem::create_directories(path);
    return path;
  }();
  static KernelCache cache(dir);
  return cache;
}

std::string device_arch() { return fmt::format("sm_{}", cuda::current_device().sm); }

VariantSpec make_spec(const GpuCase& c) {
  VariantSpec spec;
  spec.mask = c.mask;
  spec.score = c.score;
  for (const std::string& param : c.params)
    spec.signature.params.push_back(expr::parse_param_decl(param));
  for (const TensorInput& tensor : c.tensors) {
    spec.signature.tensors.push_back(expr::parse_tensor_decl(tensor.decl));
  }
  spec.dtype = c.dtype;
  spec.head_dim = c.head_dim;
  return spec;
}

CaseResult run_case(const GpuCase& c) {
  const VariantSpec spec = make_spec(c);
  const expr::Expression mask =
      expr::parse_expression(expr::ExprKind::mask, spec.mask, spec.signature);
  const expr::Expression score =
      expr::parse_expression(expr::ExprKind::score, spec.score, spec.signature);
  const KernelBinary kernel = compile_variant(spec, device_arch(), test_cache());

  AttentionShape shape = c.shape;
  shape.head_dim = c.head_dim;
  reference::ProblemOptions options;
  options.dtype = c.dtype;
  options.layout = c.layout;
  options.row_padding = c.row_padding;
  options.with_lse = c.with_lse;
  options.seed = c.seed;
  options.scale = c.scale;
  reference::HostProblem problem = reference::make_problem(shape, options);
  const AttentionBuffers host = problem.buffers();

  // Device copies; out and lse start as NaN (the host problem poisons them, padding included).
  const cuda::MemoryKind kind = c.managed ? cuda::MemoryKind::managed : cuda::MemoryKind::device;
  cuda::DeviceBuffer q(problem.q.storage_bytes(), kind), k(problem.k.storage_bytes(), kind),
      v(problem.v.storage_bytes(), kind), out(problem.out.storage_bytes(), kind);
  const auto* poisoned_out = static_cast<const std::byte*>(problem.out.data());
  const std::vector<std::byte> poisoned(poisoned_out, poisoned_out + problem.out.storage_bytes());
  q.upload(bytes_of(problem.q.data(), problem.q.storage_bytes()));
  k.upload(bytes_of(problem.k.data(), problem.k.storage_bytes()));
  v.upload(bytes_of(problem.v.data(), problem.v.storage_bytes()));
  out.upload(bytes_of(problem.out.data(), problem.out.storage_bytes()));
  std::unique_ptr<cuda::DeviceBuffer> lse;
  if (c.with_lse) {
    std::vector<float> poison(problem.lse.size(), std::numeric_limits<float>::quiet_NaN());
    lse = std::make_unique<cuda::DeviceBuffer>(poison.size() * sizeof(float), kind);
    lse->upload(bytes_of(poison));
  }

  VariantArgs host_args{};
  VariantArgs device_args{};
  for (std::size_t i = 0; i < c.scalars.size(); ++i) {
    host_args.scalars[i] = device_args.scalars[i] = c.scalars[i];
  }
  std::vector<cuda::DeviceBuffer> tensor_buffers;
  for (std::size_t i = 0; i < c.tensors.size(); ++i) {
    const TensorInput& input = c.tensors[i];
    const expr::TensorDecl& decl = spec.signature.tensors[i];
    const bool is_int = decl.elem == expr::TensorElemType::int32;
    const void* data = is_int ? static_cast<const void*>(input.ints.data()) : input.floats.data();
    const std::size_t bytes = (is_int ? input.ints.size() : input.floats.size()) * 4;
    tensor_buffers.emplace_back(bytes, kind);
    tensor_buffers.back().upload(bytes_of(data, bytes));
    TensorArg arg{};
    arg.dims[0] = input.dims[0];
    arg.dims[1] = decl.rank == 2 ? input.dims[1] : 1;
    arg.rank = decl.rank;
    arg.elem = is_int ? kTensorInt32 : kTensorFloat32;
    arg.data = data;
    host_args.tensors[i] = arg;
    arg.data = tensor_buffers.back().get();
    device_args.tensors[i] = arg;
  }

  AttentionBuffers device = host;
  device.q = q.get();
  device.k = k.get();
  device.v = v.get();
  device.out = out.get();
  device.lse = lse ? static_cast<float*>(lse->get()) : nullptr;
  cuda::forward(kernel, mask, device_args, shape, device, c.stream);
  cuda::synchronize_context();

  out.download({static_cast<std::byte*>(problem.out.data()), problem.out.storage_bytes()});
  std::vector<float> lse_result(problem.lse.size());
  if (lse) lse->download({reinterpret_cast<std::byte*>(lse_result.data()), lse_result.size() * 4});

  std::vector<double> expected_out, expected_lse;
  reference::naive_attention(mask, score, host_args, shape, host, expected_out, expected_lse);

  CaseResult result;
  result.origin = kernel.origin;
  result.out = reference::compare_output(shape, host, expected_out);
  const reference::Tolerance base = reference::output_tolerance(c.dtype);
  result.out_limit = {base.max_abs_error * c.tolerance_factor, base.nmse * c.tolerance_factor};
  result.lse_limit = reference::lse_tolerance();
  if (lse) result.lse = reference::compare_lse(shape, lse_result.data(), expected_lse);
  result.padding_writes =
      writes_outside_view(problem.out, poisoned, shape, shape.num_heads_q, shape.q_len);
  return result;
}

}  // namespace attnjit::gpu_test
