// `attnjit bench`: times the variants of a manifest on the current GPU with CUDA events and
// reports median time, TFLOP/s over unmasked pairs only, and the fraction of tiles skipped.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "cache/manifest.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "expr/block_analysis.hpp"
#include "expr/evaluate.hpp"
#include "reference/random_inputs.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_memory.hpp"

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

// Per-call values of one variant: the manifest's "example", else fixed defaults.
struct VariantInputs {
  VariantArgs host{};  // tensors point into `tensor_data`
  std::vector<std::vector<std::int32_t>> tensor_data;
};

VariantInputs example_inputs(const ManifestVariant& variant, int seq_len, int heads) {
  VariantInputs inputs;
  const nlohmann::json& example = variant.example;
  const expr::Signature& signature = variant.signature;
  for (std::size_t i = 0; i < signature.params.size(); ++i) {
    const expr::ParamDecl& decl = signature.params[i];
    const nlohmann::json* value = nullptr;
    if (example.is_object() && example.contains("params") &&
        example["params"].contains(decl.name)) {
      value = &example["params"][decl.name];
    }
    if (decl.type == expr::ValueType::floating) {
      const float f = value != nullptr ? value->get<float>() : 30.0f;
      inputs.host.scalars[i] = std::bit_cast<std::int32_t>(f);
    } else {
      inputs.host.scalars[i] = value != nullptr ? value->get<int>() : 1024;
    }
  }
  inputs.tensor_data.resize(signature.tensors.size());
  for (std::size_t i = 0; i < signature.tensors.size(); ++i) {
    const expr::TensorDecl& decl = signature.tensors[i];
    std::vector<std::int32_t>& data = inputs.tensor_data[i];
    TensorArg& arg = inputs.host.tensors[i];
    arg.rank = decl.rank;
    if (decl.rank == 1) {
      // Rank 1: document ids in `documents` equal runs (the manifest's example, else 4).
      int documents = 4;
      if (example.is_object() && example.contains("tensors") &&
          example["tensors"].contains(decl.name)) {
        documents = example["tensors"][decl.name].value("documents", 4);
      }
      data.resize(static_cast<std::size_t>(seq_len));
      for (int j = 0; j < seq_len; ++j) {
        data[j] = static_cast<std::int32_t>(static_cast<std::int64_t>(j) * documents / seq_len);
      }
      arg.dims[0] = seq_len;
      arg.dims[1] = 1;
    } else {
      // Rank 2: a [heads, seq_len] table of small values (e.g. a bias).
      data.assign(static_cast<std::size_t>(heads) * seq_len, 0);
      for (std::size_t j = 0; j < data.size(); ++j) {
        data[j] = decl.elem == expr::TensorElemType::float32
                      ? std::bit_cast<std::int32_t>(static_cast<float>(j % 7) * 0.1f)
                      : static_cast<std::int32_t>(j % 7);
      }
      arg.dims[0] = heads;
      arg.dims[1] = seq_len;
    }
    arg.elem = decl.elem == expr::TensorElemType::int32 ? kTensorInt32 : kTensorFloat32;
    arg.data = data.data();
  }
  return inputs;
}

struct PairCount {
  double unmasked_pairs = 0;
  double skipped_fraction = 0;
};

// Exact: the block analysis on every tile, per-element evaluation only on partial tiles.
PairCount count_unmasked(const expr::Expression& mask, VariantArgs args, const AttentionShape& s,
                         int block_m, int block_n) {
  std::vector<expr::HostSummary> summaries;
  summaries.reserve(2 * kMaxTensors);
  for (const expr::SummaryRequest& request : expr::summary_requests(mask)) {
    const bool q_axis = request.axis == expr::SummaryAxis::q;
    TensorArg& tensor = args.tensors[request.tensor];
    summaries.push_back(
        expr::build_summary(tensor, q_axis ? block_m : block_n, q_axis ? s.q_len : s.kv_len));
    (q_axis ? tensor.q_summary : tensor.kv_summary) = summaries.back().view();
  }
  std::int64_t tiles = 0, empty = 0;
  double pairs = 0;
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < s.num_heads_q; ++h) {
      for (int q0 = 0; q0 < s.q_len; q0 += block_m) {
        for (int k0 = 0; k0 < s.kv_len; k0 += block_n) {
          const TileBounds tile{b,
                                h,
                                q0,
                                std::min(q0 + block_m, s.q_len),
                                k0,
                                std::min(k0 + block_n, s.kv_len),
                                s.q_len,
                                s.kv_len,
                                s.num_heads_q};
          ++tiles;
          const TileClass cls = expr::classify_tile(mask, args, tile);
          if (cls == kTileEmpty) {
            ++empty;
          } else if (cls == kTileFull) {
            pairs += static_cast<double>(tile.q_end - tile.q_begin) * (tile.kv_end - tile.kv_begin);
          } else {
            for (int i = tile.q_begin; i < tile.q_end; ++i) {
              for (int j = tile.kv_begin; j < tile.kv_end; ++j) {
                const expr::ElementIndex at{b, h, i, j, s.q_len, s.kv_len, s.num_heads_q};
                if (expr::evaluate_mask(mask, args, at)) pairs += 1;
              }
            }
          }
        }
      }
    }
  }
  return {pairs, tiles == 0 ? 0.0 : static_cast<double>(empty) / static_cast<double>(tiles)};
}

struct InputSet {
  cuda::DeviceBuffer q, k, v, out;
};

void run_bench(const BenchOptions& options) {
  if (options.seq_len <= 0 || options.batch <= 0 || options.heads <= 0) {
    throw_error(Status::invalid_argument, "--seq-len, --batch and --heads must be positive");
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
    VariantSpec spec{variant.mask, variant.score, variant.signature, dtype, options.head_dim};
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
    std::vector<float> times;
    cuda::EventTimer timer;
    for (int i = 0; i < options.iterations; ++i) {
      const AttentionBuffers b = buffers_for(sets[i % num_sets]);
      timer.start(nullptr);
      cuda::forward(kernel, mask, device_args, shape, b, nullptr);
      timer.stop(nullptr);
      times.push_back(timer.elapsed_ms());
    }
    std::nth_element(times.begin(), times.begin() + static_cast<long>(times.size() / 2),
                     times.end());
    const double median_ms = times[times.size() / 2];

    const PairCount count =
        count_unmasked(mask, inputs.host, shape, kernel.config.block_m, kernel.config.block_n);
    // FLOPs = 4 * D * unmasked pairs (two matmuls, multiply-add = 2), pairs summed over B and H.
    const double flops = 4.0 * options.head_dim * count.unmasked_pairs;
    fmt::print("{:<18} {:>10.3f} {:>10.1f} {:>14.4g} {:>8.1f}%\n", variant.name, median_ms,
               flops / (median_ms * 1e-3) / 1e12, count.unmasked_pairs,
               100.0 * count.skipped_fraction);
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
      if (error.status() == Status::no_device || error.status() == Status::unsupported) {
        fmt::print(stderr, "attnjit bench needs a CUDA GPU (compute capability 8.0+): {}\n",
                   error.what());
      }
      throw;
    }
  });
}

}  // namespace attnjit::cli
