// attnjit demo: the standard variants end to end, through the public API. For each: compile
// through the cache (for the local GPU, or sm_90 to show the JIT path without one), run on the
// GPU if there is one and on the CPU reference otherwise, check against the naive reference,
// print a table.
#include <fmt/core.h>

#include <chrono>

#include "attnjit/attnjit.hpp"
#include "commands.hpp"
#include "option_checks.hpp"
#include "printable.hpp"
#include "public_variant.hpp"
#include "testkit/compare.hpp"
#include "testkit/example_inputs.hpp"
#include "testkit/host_problem.hpp"
#include "testkit/placement.hpp"
#include "testkit/tile_census.hpp"

namespace attnjit::cli {
namespace {

const char* origin_name(attnjit_kernel_origin origin) {
  switch (origin) {
    case ATTNJIT_ORIGIN_MEMORY:
      return "memory";
    case ATTNJIT_ORIGIN_DISK:
      return "cached";
    case ATTNJIT_ORIGIN_COMPILED:
      return "compiled";
  }
  return "?";
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

struct DemoSetup {
  bool on_gpu;
  std::string arch;
  int len, heads, head_dim;
  attnjit_dtype dtype;
};

// One row of the table: compile (or load), run, count tiles, check. False when the check fails.
bool demo_variant(attnjit_runtime* runtime, const attnjit_manifest_variant& mv,
                  const DemoSetup& setup) {
  const c::VariantPtr variant =
      create_variant(runtime, testkit::manifest_variant_desc(mv, setup.dtype, setup.head_dim));

  attnjit_inspect_options inspect;
  attnjit_inspect_options_init(&inspect);
  inspect.arch = setup.arch.c_str();
  inspect.parts = ATTNJIT_INSPECT_RESOURCES;
  const auto compile_start = std::chrono::steady_clock::now();
  attnjit_variant_info* raw_info = nullptr;
  c::check(attnjit_variant_inspect(&raw_info, variant.get(), &inspect));
  const c::VariantInfoPtr info(raw_info);
  const double compile_ms = ms_since(compile_start);

  const testkit::ExampleInputs inputs = testkit::example_inputs(mv, setup.len, setup.heads);
  const testkit::Shape shape{1, setup.heads, setup.heads, setup.len, setup.len, setup.head_dim};
  testkit::ProblemOptions problem_options;
  problem_options.dtype = setup.dtype;
  testkit::HostProblem problem = testkit::make_problem(shape, problem_options);

  testkit::ProblemPlacement placement(problem, setup.on_gpu);
  std::vector<attnjit_tensor_arg> placed_tensors;
  for (std::size_t i = 0; i < inputs.tensors.size(); ++i) {
    attnjit_tensor_arg placed = inputs.tensors[i];
    placed.data = placement.place(inputs.tensor_data[i].data(), inputs.tensor_data[i].size() * 4);
    placed_tensors.push_back(placed);
  }
  const attnjit_forward_args args =
      testkit::with_values(placement.args(), inputs.params, placed_tensors);
  const auto run_start = std::chrono::steady_clock::now();
  c::check(attnjit_forward(variant.get(), &args));
  placement.fetch_results();
  const double run_ms = ms_since(run_start);

  // The tiles of the kernel that ran: the GPU kernel's configuration, or the CPU reference's.
  const attnjit_forward_args host_args =
      testkit::with_values(problem.forward_args(), inputs.params, inputs.tensors);
  attnjit_tile_census census{};
  c::check(attnjit_variant_tile_census(&census, variant.get(), &host_args, nullptr));
  std::vector<double> expected_out(static_cast<std::size_t>(setup.heads) * setup.len *
                                   setup.head_dim);
  c::check(attnjit_variant_reference(variant.get(), &host_args, expected_out.data(), nullptr));
  const testkit::ErrorStats stats =
      testkit::compare_strided(problem.out.data(), setup.dtype, problem.out.strides(), 1,
                               setup.heads, setup.len, setup.head_dim, expected_out);
  const bool ok = testkit::within(stats, testkit::output_tolerance(setup.dtype));
  fmt::print("{:<16} {:>9} {:>7.1f} ms {:>5} {:>7} {:>7.1f} ms {:>7.1f}% {:>8.1f}% {:>10.2e}{}\n",
             printable(mv.name), origin_name(info->origin), compile_ms, info->registers,
             info->spill_store_bytes + info->spill_load_bytes, run_ms,
             100.0 * testkit::skipped_fraction(census), 100.0 * testkit::kept_fraction(census),
             stats.max_abs_error, ok ? "" : "  FAIL");
  return ok;
}

void demo(const std::string& cache_dir, int len_option) {
  const c::RuntimePtr runtime = create_runtime(ATTNJIT_BACKEND_AUTO, cache_dir);
  DemoSetup setup;
  setup.on_gpu = attnjit_runtime_backend(runtime.get()) == ATTNJIT_BACKEND_CUDA;
  setup.arch = setup.on_gpu ? attnjit_runtime_device_arch(runtime.get()) : "sm_90";
  setup.len = len_option > 0 ? len_option : (setup.on_gpu ? 4096 : 1024);
  setup.heads = setup.on_gpu ? 16 : 4;
  setup.head_dim = setup.on_gpu ? 128 : 64;
  setup.dtype = ATTNJIT_DTYPE_BF16;

  fmt::print("attnjit {} demo: kernels for {} ({}), attention on the {} (B=1 H={} L={} D={} {})\n",
             attnjit_version(), setup.arch, setup.on_gpu ? "this GPU" : "no GPU: compiled, not run",
             setup.on_gpu ? "GPU" : "CPU reference", setup.heads, setup.len, setup.head_dim,
             testkit::dtype_name(setup.dtype));
  fmt::print("cache: {}\n\n", cache_root(cache_dir));
  fmt::print("{:<16} {:>9} {:>10} {:>5} {:>7} {:>10} {:>8} {:>9} {:>10}\n", "variant", "kernel",
             "time", "regs", "spills", "forward", "skipped", "kept", "max err");

  attnjit_manifest* raw_manifest = nullptr;
  c::check(attnjit_manifest_load(&raw_manifest, nullptr));
  const c::ManifestPtr manifest(raw_manifest);
  bool all_ok = true;
  for (std::size_t i = 0; i < attnjit_manifest_count(manifest.get()); ++i) {
    all_ok = demo_variant(runtime.get(), *attnjit_manifest_variant_at(manifest.get(), i), setup) &&
             all_ok;
  }
  fmt::print("\nkernel: compiled = NVRTC now, cached = loaded from the disk cache.\n");
  if (!all_ok) throw CLI::RuntimeError(1);
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto* command =
      app.add_subcommand("demo", "Compile, cache and run the standard variants; print a table");
  auto cache_dir = std::make_shared<std::string>();
  auto len = std::make_shared<int>(0);
  add_cache_dir_option(*command, *cache_dir);
  command->add_option("--seq-len", *len,
                      "sequence length (default: 4096 on a GPU, 1024 on the CPU)");
  command->callback([cache_dir, len] { demo(*cache_dir, *len); });
}

}  // namespace attnjit::cli
