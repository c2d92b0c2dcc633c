// `attnjit bench`: times the variants of a manifest on the current GPU with CUDA events and
// reports median time, TFLOP/s over unmasked pairs only, and the fraction of tiles skipped.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "jit/kernel_cache.hpp"
#include "jit/manifest.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "common/printable.hpp"
#include "example_inputs.hpp"
#include "expr/block_analysis.hpp"
#include "expr/evaluate.hpp"
#include "reference/random_inputs.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_memory.hpp"
#include "reference/tile_census.hpp"

namespace attnjit::cli {
namespace {

struct BenchOptions {
  std::string manifest;  // empty: the standard manifest
  std::vector<std::string> variants;
  int seq_len = 4096;
  int batch = 4;
  int heads = 16;
  int head_dim = 128;
  std::string dtype = "bf16";
  int warmup = 5;
  int iterations = 30;
};

struct InputSet {
  cuda::DeviceBuffer q, k, v, out;
};

void run_bench(const BenchOptions& options) {
  if (options.seq_len <= 0 || options.batch <= 0 || options.heads <= 0) {
    throw_error(Status::invalid_argument, "--seq-len, --batch and --heads must be positive");
  }
  if (options.iterations <= 0 || options.warmup < 0) {
    throw_error(Status::invalid_argument, "--iters must be positive and --warmup not negative");
  }
  const cuda::DeviceInfo device = cuda::current_device();  // throws without a GPU
  const std::string arch = fmt::format("sm_{}", device.sm);
  const DType dtype = parse_kernel_dtype(options.dtype);
  const Manifest manifest =
      options.manifest.empty() ? standard_manifest() : load_manifest(options.manifest);
  KernelCache cache;

  AttentionShape shape;
  shape.batch = options.batch;
  shape.num_heads_q = shape.num_heads_kv = options.heads;
  shape.q_len = shape.kv_len = options.seq_len;
  shape.head_dim = options.head_dim;
  const Strides strides =
      layout_strides(Layout::bhld, options.heads, options.seq_len, options.head_dim);
  const std::size_t tensor_bytes = static_cast<std::size_t>(shape.batch) * options.heads *
                                   options.seq_len * options.head_dim * dtype_size(dtype);

  // Note: rotating through input sets whose total exceeds twice the L2 size keeps every timed
  // call reading from HBM, as in a real model step.
  const std::size_t set_bytes = 4 * tensor_bytes;
  const std::size_t l2 = static_cast<std::size_t>(std::max(device.l2_bytes, 1));
  const int num_sets = static_cast<int>(std::clamp<std::size_t>(2 * l2 / set_bytes + 2, 2, 16));
  std::vector<InputSet> sets;
  {
    std::vector<std::byte> host(tensor_bytes);
    for (int i = 0; i < num_sets; ++i) {
      InputSet set{cuda::DeviceBuffer(tensor_bytes), cuda::DeviceBuffer(tensor_bytes),
                   cuda::DeviceBuffer(tensor_bytes), cuda::DeviceBuffer(tensor_bytes)};
      for (cuda::DeviceBuffer* buffer : {&set.q, &set.k, &set.v}) {
        reference::fill_random(host.data(), dtype,
                               static_cast<std::int64_t>(tensor_bytes / dtype_size(dtype)),
                               static_cast<std::uint64_t>(i * 3 + (buffer == &set.q   ? 0
                                                                   : buffer == &set.k ? 1
                                                                                      : 2)));
        buffer->upload(host);
      }
      sets.push_back(std::move(set));
    }
  }

  fmt::print(
      "device {} ({}, {} SMs, L2 {} MiB); B={} H={} L={} D={} {}; {} input sets, median "
      "of {} runs after {} warm-up\n",
      device.name, arch, device.multiprocessors, l2 >> 20, shape.batch, options.heads,
      options.seq_len, options.head_dim, dtype_name(dtype), num_sets, options.iterations,
      options.warmup);
  fmt::print("{:<18} {:>10} {:>10} {:>14} {:>9}\n", "variant", "median ms", "TFLOP/s",
             "unmasked pairs", "skipped");

  int benchmarked = 0;
  for (const ManifestVariant& variant : manifest.variants) {
    if (!options.variants.empty() && std::find(options.variants.begin(), options.variants.end(),
                                               variant.name) == options.variants.end()) {
      continue;
    }
    ++benchmarked;
    VariantSpec spec{variant.mask, variant.score, variant.signature, dtype, options.head_dim,
                     variant.name};
    const KernelBinary kernel = compile_variant(spec, arch, cache);
    const expr::Expression mask =
        expr::parse_expression(expr::ExprKind::mask, spec.mask, spec.signature);
    VariantInputs inputs = example_inputs(variant, options.seq_len, options.heads);

    std::vector<cuda::DeviceBuffer> tensor_buffers;
    VariantArgs device_args = inputs.host;
    for (std::size_t i = 0; i < inputs.tensor_data.size(); ++i) {
      const auto& data = inputs.tensor_data[i];
      tensor_buffers.emplace_back(data.size() * sizeof(std::int32_t));
      tensor_buffers.back().upload(std::as_bytes(std::span(data)));
      device_args.tensors[i].data = tensor_buffers.back().get();
    }

    auto buffers_for = [&](InputSet& set) {
      AttentionBuffers b;
      b.q = set.q.get();
      b.k = set.k.get();
      b.v = set.v.get();
      b.out = set.out.get();
      b.q_dtype = b.k_dtype = b.v_dtype = dtype;
      b.q_strides = b.k_strides = b.v_strides = b.out_strides = strides;
      return b;
    };
    for (int i = 0; i < options.warmup; ++i) {
      cuda::forward(kernel, mask, device_args, shape, buffers_for(sets[i % num_sets]), nullptr);
    }
    cuda::synchronize_context();
    // Note: every timed call gets its own pair of events and nothing waits until all are queued,
    // so while the GPU runs call i the host already checks and queues call i + 1: the events
    // bracket the kernels (summaries included), not the host-side checks and launch latency that
    // a wait after every call would put between the start event and the kernel.
    std::vector<std::unique_ptr<cuda::EventTimer>> timers;
    for (int i = 0; i < options.iterations; ++i) {
      timers.push_back(std::make_unique<cuda::EventTimer>());
    }
    for (int i = 0; i < options.iterations; ++i) {
      const AttentionBuffers b = buffers_for(sets[i % num_sets]);
      timers[static_cast<std::size_t>(i)]->start(nullptr);
      cuda::forward(kernel, mask, device_args, shape, b, nullptr);
      timers[static_cast<std::size_t>(i)]->stop(nullptr);
    }
    std::vector<float> times;
    for (const auto& timer : timers) times.push_back(timer->elapsed_ms());
    std::nth_element(times.begin(), times.begin() + static_cast<long>(times.size() / 2),
                     times.end());
    const double median_ms = times[times.size() / 2];

    const reference::TileCensus count =
        reference::count_tiles(mask, inputs.host, shape, kernel.config.block_m, kernel.config.block_n);
    // FLOPs = 4 * D * unmasked pairs (two matmuls, multiply-add = 2), pairs summed over B and H.
    const double flops = 4.0 * options.head_dim * static_cast<double>(count.kept_pairs);
    fmt::print("{:<18} {:>10.3f} {:>10.1f} {:>14.4g} {:>8.1f}%\n", printable(variant.name),
               median_ms, flops / (median_ms * 1e-3) / 1e12, static_cast<double>(count.kept_pairs),
               100.0 * count.skipped_fraction());
  }
  if (benchmarked == 0) {
    throw_error(Status::invalid_argument, "no variant of {} matches --variant", manifest.source);
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* bench = app.add_subcommand(
      "bench", "Time the variants of a manifest on the GPU (median of CUDA-event timings)");
  bench->add_option("--manifest", options->manifest, "Manifest file (default: the standard one)");
  bench->add_option("--variant", options->variants, "Only these variants (repeatable)");
  bench->add_option("--seq-len", options->seq_len, "Query and key length")->capture_default_str();
  bench->add_option("--batch", options->batch, "Batch size")->capture_default_str();
  bench->add_option("--heads", options->heads, "Query and key/value heads")->capture_default_str();
  bench->add_option("--head-dim", options->head_dim, "Head dimension")->capture_default_str();
  bench->add_option("--dtype", options->dtype, "bf16 or fp16")->capture_default_str();
  bench->add_option("--warmup", options->warmup, "Untimed calls first")->capture_default_str();
  bench->add_option("--iters", options->iterations, "Timed calls")->capture_default_str();
  bench->callback([options] {
    try {
      run_bench(*options);
    } catch (const Error& error) {
      if (error.status() != Status::no_device && error.status() != Status::unsupported) throw;
      fmt::print(stderr, "attnjit bench needs a CUDA GPU (compute capability 8.0+): {}\n",
                 error.what());
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace attnjit::cli
