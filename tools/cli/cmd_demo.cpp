// attnjit demo: the standard variants end to end. For each: parse, lower, compile through the
// cache (for the local GPU, or sm_90 to show the JIT path without one), run on the GPU if there
// is one and on the CPU reference otherwise, check against the naive reference, print a table.
#include <fmt/core.h>

#include <chrono>

#include "codegen/variant_source.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "example_inputs.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/manifest.hpp"
#include "option_checks.hpp"
#include "problem_placement.hpp"
#include "reference/attention.hpp"
#include "reference/compare.hpp"
#include "reference/naive.hpp"
#include "reference/random_inputs.hpp"
#include "runtime/runtime.hpp"
#include "runtime/variant.hpp"
#include "reference/tile_census.hpp"

namespace attnjit::cli {
namespace {

const char* origin_name(KernelOrigin origin) {
  switch (origin) {
    case KernelOrigin::memory: return "memory";
    case KernelOrigin::disk: return "cached";
    case KernelOrigin::compiled: return "compiled";
  }
  return "?";
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

void demo(const std::string& cache_dir, int len_option) {
  RuntimeOptions runtime_options;
  runtime_options.cache_dir = cache_dir;
  Runtime runtime(runtime_options);
  const bool on_gpu = runtime.backend() == Backend::cuda;
  const std::string arch = on_gpu ? runtime.device_arch() : "sm_90";
  const int len = len_option > 0 ? len_option : (on_gpu ? 4096 : 1024);
  const int heads = on_gpu ? 16 : 4;
  const int head_dim = on_gpu ? 128 : 64;
  const DType dtype = DType::bf16;

  fmt::print("attnjit {} demo: kernels for {} ({}), attention on the {} (B=1 H={} L={} D={} {})\n",
             ATTNJIT_VERSION_STRING, arch, on_gpu ? "this GPU" : "no GPU: compiled, not run",
             on_gpu ? "GPU" : "CPU reference", heads, len, head_dim, dtype_name(dtype));
  fmt::print("cache: {}\n\n", runtime.cache().root().string());
  fmt::print("{:<16} {:>9} {:>10} {:>5} {:>7} {:>10} {:>8} {:>9} {:>10}\n", "variant", "kernel",
             "time", "regs", "spills", "forward", "skipped", "kept", "max err");

  bool all_ok = true;
  for (const ManifestVariant& mv : standard_manifest().variants) {
    VariantSpec spec{mv.mask, mv.score, mv.signature, dtype, head_dim, mv.name};
    const auto compile_start = std::chrono::steady_clock::now();
    const VariantKernel kernel = acquire_variant(spec, arch, runtime.cache());
    const double compile_ms = ms_since(compile_start);

    Variant variant(runtime, spec);
    const VariantInputs inputs = example_inputs(mv, len, heads);
    AttentionShape shape{1, heads, heads, len, len, head_dim};
    reference::ProblemOptions problem_options;
    problem_options.dtype = dtype;
    reference::HostProblem problem = reference::make_problem(shape, problem_options);
    AttentionBuffers host = problem.buffers();

    ProblemPlacement placement(problem, on_gpu);
    ForwardCall call;
    call.shape = shape;
    call.buffers = placement.buffers();
    call.scalars.assign(inputs.host.scalars, inputs.host.scalars + mv.signature.params.size());
    for (std::size_t i = 0; i < inputs.tensor_data.size(); ++i) {
      const auto& data = inputs.tensor_data[i];
      const TensorArg& arg = inputs.host.tensors[i];
      call.tensors.push_back(
          {placement.place(data.data(), data.size() * 4), {arg.dims[0], arg.dims[1]}});
    }

    const auto run_start = std::chrono::steady_clock::now();
    variant.forward(call);
    placement.fetch_results();
    const double run_ms = ms_since(run_start);

    ForwardCall host_call = call;
    host_call.buffers = host;
    for (std::size_t i = 0; i < inputs.tensor_data.size(); ++i) {
      host_call.tensors[i].data = inputs.tensor_data[i].data();
    }
    const VariantArgs host_args = variant.pack_args(host_call);
    // The tiles of the kernel that ran: the GPU kernel's configuration, or the CPU reference's.
    const codegen::KernelConfig& config = kernel.binary->config;
    const reference::TileCensus census =
        on_gpu ? reference::count_tiles(variant.mask(), host_args, shape, config.block_m, config.block_n)
               : reference::count_tiles(variant.mask(), host_args, shape, reference::ReferenceOptions{}.tile_q,
                             reference::ReferenceOptions{}.tile_kv);
    std::vector<double> expected_out, expected_lse;
    reference::naive_attention(variant.mask(), variant.score(), host_args, shape, host,
                               expected_out, expected_lse);
    const auto stats = reference::compare_output(shape, host, expected_out);
    const bool ok = reference::within(stats, reference::output_tolerance(dtype));
    all_ok = all_ok && ok;
    const auto& res = kernel.binary->forward_resources;
    fmt::print("{:<16} {:>9} {:>7.1f} ms {:>5} {:>7} {:>7.1f} ms {:>7.1f}% {:>8.1f}% {:>10.2e}{}\n",
               mv.name, origin_name(kernel.origin), compile_ms, res.registers,
               res.spill_store_bytes + res.spill_load_bytes, run_ms,
               100.0 * census.skipped_fraction(), 100.0 * census.kept_fraction(),
               stats.max_abs_error, ok ? "" : "  FAIL");
  }
  fmt::print("\nkernel: compiled = NVRTC now, cached = loaded from the disk cache.\n");
  if (!all_ok) throw CLI::RuntimeError(1);
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "demo", "Compile, cache and run the standard variants; print a table");
  auto cache_dir = std::make_shared<std::string>();
  auto len = std::make_shared<int>(0);
  add_cache_dir_option(*command, *cache_dir);
  command->add_option("--seq-len", *len, "sequence length (default: 4096 on a GPU, 1024 on the CPU)");
  command->callback([cache_dir, len] { demo(*cache_dir, *len); });
}

}  // namespace attnjit::cli
