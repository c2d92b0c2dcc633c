// attnjit run: one forward pass on random inputs through the public C API, timed, and checked
// against the naive double-precision reference.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <random>

#include "attnjit/attnjit.hpp"
#include "codegen/variant_source.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "expr/block_analysis.hpp"
#include "option_checks.hpp"
#include "problem_placement.hpp"
#include "public_variant.hpp"
#include "reference/attention.hpp"
#include "reference/compare.hpp"
#include "reference/naive.hpp"
#include "reference/random_inputs.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_memory.hpp"
#include "reference/tile_census.hpp"
#include "variant_options.hpp"

namespace attnjit::cli {
namespace {

struct RunOptions {
  VariantOptions variant;
  std::string device = "auto";
  std::string layout = "bhld";
  int batch = 1, heads = 8, kv_heads = 0, q_len = 1024, kv_len = 0;
  int repeat = 3;
  std::uint64_t seed = 1;
  bool check = true;
};

// Host data for each declared tensor: rank-1 int32 tensors hold sorted document ids (four
// documents), other int32 tensors random ids in [0, 4), float32 tensors uniform [-1, 1).
struct HostTensorData {
  std::vector<std::int32_t> words;
  std::int64_t dims[2] = {1, 1};
};

std::vector<HostTensorData> make_tensors(const expr::Signature& sig, const AttentionShape& shape,
                                         std::uint64_t seed) {
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  std::vector<HostTensorData> out;
  for (const auto& decl : sig.tensors) {
    HostTensorData t;
    if (decl.rank == 1) {
      t.dims[0] = std::max(shape.q_len, shape.kv_len);
    } else {
      t.dims[0] = shape.num_heads_q;
      t.dims[1] = std::int64_t{shape.q_len} + shape.kv_len;
    }
    t.words.resize(static_cast<std::size_t>(t.dims[0] * t.dims[1]));
    if (decl.elem == expr::TensorElemType::int32) {
      std::uniform_int_distribution<int> ids(0, 3);
      for (auto& w : t.words) w = ids(rng);
      if (decl.rank == 1) std::sort(t.words.begin(), t.words.end());
    } else {
      std::uniform_real_distribution<float> values(-1.0f, 1.0f);
      for (auto& w : t.words) w = std::bit_cast<std::int32_t>(values(rng));
    }
    out.push_back(std::move(t));
  }
  return out;
}

// Refuses a problem whose host buffers cannot fit in this machine's memory, before allocating
// them, so a huge --q-len gets a clear message instead of a failed multi-terabyte allocation.
void check_host_memory(const AttentionShape& shape, DType dtype) {
  const auto tensor_bytes = [&](int heads, int len) {
    return static_cast<long double>(shape.batch) * heads * len * shape.head_dim *
           static_cast<long double>(dtype_size(dtype));
  };
  const long double needed =
      2 * tensor_bytes(shape.num_heads_q, shape.q_len) +
      2 * tensor_bytes(shape.num_heads_kv, shape.kv_len) +
      static_cast<long double>(shape.batch) * shape.num_heads_q * shape.q_len * sizeof(float);
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  const long double available = pages > 0 && page_size > 0
                                    ? static_cast<long double>(pages) * page_size
                                    : static_cast<long double>(1ull << 62);
  if (needed > available) {
    throw_error(Status::out_of_memory,
                "the problem needs {:.1f} GiB of host memory for q, k, v, out and lse; this "
                "machine has {:.1f} GiB (use smaller --batch, --heads, --q-len, --kv-len or "
                "--head-dim)",
                static_cast<double>(needed / (1ull << 30)),
                static_cast<double>(available / (1ull << 30)));
  }
}

void run(const RunOptions& o) {
  const VariantSpec spec = o.variant.spec();
  const std::vector<std::int32_t> param_values = o.variant.param_values();
  AttentionShape shape{o.batch, o.heads, o.kv_heads > 0 ? o.kv_heads : o.heads, o.q_len,
                       o.kv_len > 0 ? o.kv_len : o.q_len, spec.head_dim};
  check_host_memory(shape, spec.dtype);
  reference::ProblemOptions problem_options;
  problem_options.dtype = spec.dtype;
  problem_options.layout = o.layout == "blhd" ? Layout::blhd : Layout::bhld;
  problem_options.seed = o.seed;
  reference::HostProblem problem = reference::make_problem(shape, problem_options);
  std::vector<HostTensorData> tensors = make_tensors(spec.signature, shape, o.seed);

  const c::RuntimePtr runtime = create_runtime(o.device == "cpu"    ? ATTNJIT_BACKEND_CPU
                                               : o.device == "cuda" ? ATTNJIT_BACKEND_CUDA
                                                                    : ATTNJIT_BACKEND_AUTO);
  const bool on_gpu = attnjit_runtime_backend(runtime.get()) == ATTNJIT_BACKEND_CUDA;
  const c::VariantPtr variant = create_variant(runtime.get(), spec);
  const auto prepare_start = std::chrono::steady_clock::now();
  check_status(attnjit_variant_prepare(variant.get()));
  const double prepare_ms = std::chrono::duration<double, std::milli>(
                                std::chrono::steady_clock::now() - prepare_start)
                                .count();

  const AttentionBuffers host = problem.buffers();
  ProblemPlacement placement(problem, on_gpu);
  const AttentionBuffers& placed = placement.buffers();
  std::vector<attnjit_scalar> params(param_values.size());
  for (std::size_t i = 0; i < params.size(); ++i) params[i].i = param_values[i];

  attnjit_forward_args args;
  attnjit_forward_args_init(&args);
  args.q = placed.q;
  args.k = placed.k;
  args.v = placed.v;
  args.out = placed.out;
  args.lse = placed.lse;
  std::vector<attnjit_tensor_arg> tensor_args;
  for (const auto& t : tensors) {
    tensor_args.push_back(
        {placement.place(t.words.data(), t.words.size() * 4), {t.dims[0], t.dims[1]}});
  }
  args.q_dtype = args.k_dtype = args.v_dtype = c_dtype(spec.dtype);
  args.batch = shape.batch;
  args.num_heads_q = shape.num_heads_q;
  args.num_heads_kv = shape.num_heads_kv;
  args.q_len = shape.q_len;
  args.kv_len = shape.kv_len;
  args.layout = problem_options.layout == Layout::blhd ? ATTNJIT_LAYOUT_BLHD : ATTNJIT_LAYOUT_BHLD;
  args.params = params.data();
  args.num_params = static_cast<int>(params.size());
  args.tensors = tensor_args.data();
  args.num_tensors = static_cast<int>(tensor_args.size());

  std::vector<double> times;
  for (int i = 0; i < std::max(1, o.repeat); ++i) {
    const auto start = std::chrono::steady_clock::now();
    check_status(attnjit_forward(variant.get(), &args));
    if (on_gpu) cuda::synchronize_context();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                              start)
                        .count());
  }
  std::sort(times.begin(), times.end());
  placement.fetch_results();

  // Host view of the variant's values, for the census and the reference check.
  const auto mask = expr::parse_expression(expr::ExprKind::mask, spec.mask, spec.signature);
  const auto score = expr::parse_expression(expr::ExprKind::score, spec.score, spec.signature);
  VariantArgs host_args{};
  for (std::size_t i = 0; i < param_values.size(); ++i) host_args.scalars[i] = param_values[i];
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    auto& arg = host_args.tensors[i];
    arg.data = tensors[i].words.data();
    arg.dims[0] = static_cast<int>(tensors[i].dims[0]);
    arg.dims[1] = static_cast<int>(tensors[i].dims[1]);
    arg.rank = spec.signature.tensors[i].rank;
    arg.elem = spec.signature.tensors[i].elem == expr::TensorElemType::int32 ? kTensorInt32
                                                                            : kTensorFloat32;
  }
  // The tiles of the kernel that ran: the GPU kernel's configuration, or the CPU reference's.
  int tile_q = reference::ReferenceOptions{}.tile_q;
  int tile_kv = reference::ReferenceOptions{}.tile_kv;
  if (on_gpu) {
    const codegen::KernelConfig config =
        codegen::choose_kernel_config(cuda::current_device().sm, spec.dtype, shape.head_dim);
    tile_q = config.block_m;
    tile_kv = config.block_n;
  }
  const reference::TileCensus census = reference::count_tiles(mask, host_args, shape, tile_q, tile_kv);

  fmt::print("attnjit run: {} backend, {}, B={} Hq={} Hkv={} Lq={} Lkv={} D={}, layout {}\n",
             on_gpu ? "cuda" : "cpu", dtype_name(spec.dtype), shape.batch, shape.num_heads_q,
             shape.num_heads_kv, shape.q_len, shape.kv_len, shape.head_dim, o.layout);
  fmt::print("  mask     {}\n  score    {}\n", mask.canonical(), score.canonical());
  fmt::print("  prepare  {:.1f} ms\n", prepare_ms);
  fmt::print("  forward  {:.3f} ms (median of {}), {:.1f}% of {}x{} tiles skipped, {:.1f}% of "
             "pairs kept\n",
             times[times.size() / 2], times.size(), 100.0 * census.skipped_fraction(), tile_q,
             tile_kv, 100.0 * census.kept_fraction());

  const double work = static_cast<double>(shape.batch) * shape.num_heads_q * shape.q_len *
                      static_cast<double>(shape.kv_len) * shape.head_dim;
  if (!o.check) return;
  if (work > 4e9) {
    fmt::print("  check    skipped: the naive reference would take too long (use a smaller "
               "problem)\n");
    return;
  }
  std::vector<double> expected_out, expected_lse;
  reference::naive_attention(mask, score, host_args, shape, host, expected_out, expected_lse);
  const auto out_stats = reference::compare_output(shape, host, expected_out);
  const auto lse_stats = reference::compare_lse(shape, host.lse, expected_lse);
  const bool ok = reference::within(out_stats, reference::output_tolerance(spec.dtype)) &&
                  reference::within(lse_stats, reference::lse_tolerance());
  fmt::print("  check    out {}\n           lse {}\n           {}\n", reference::describe(out_stats),
             reference::describe(lse_stats), ok ? "PASS" : "FAIL");
  if (!ok) throw CLI::RuntimeError(1);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "run", "Run one variant on random inputs; report the time and a check against the naive "
             "reference");
  auto o = std::make_shared<RunOptions>();
  o->variant.head_dim = 64;
  o->variant.add_to(*command, /*allow_fp32=*/true);
  command->add_option("--device", o->device, "cpu, cuda or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  command->add_option("--layout", o->layout, "bhld or blhd")
      ->check(CLI::IsMember({"bhld", "blhd"}))
      ->capture_default_str();
  // Note: CLI::PositiveNumber reports its range as 0 to DBL_MAX; explicit int ranges read well.
  const CLI::Range positive(1, std::numeric_limits<int>::max());
  const CLI::Range zero_or_more(0, std::numeric_limits<int>::max());
  command->add_option("--batch", o->batch)->capture_default_str()->check(positive);
  command->add_option("--heads", o->heads, "query heads")->capture_default_str()->check(positive);
  command->add_option("--kv-heads", o->kv_heads, "key/value heads (default: --heads)")
      ->check(zero_or_more);
  command->add_option("--q-len", o->q_len)->capture_default_str()->check(positive);
  command->add_option("--kv-len", o->kv_len, "(default: --q-len)")->check(zero_or_more);
  command->add_option("--repeat", o->repeat)->capture_default_str()->check(positive);
  command->add_option("--seed", o->seed, "seed of the random inputs")
      ->capture_default_str()
      ->check(unsigned_64());
  command->add_flag("!--no-check", o->check, "skip the check against the naive reference");
  command->callback([o] { run(*o); });
}

}  // namespace attnjit::cli
