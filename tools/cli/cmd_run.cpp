// attnjit run: one forward pass on random inputs through the public C API, timed, and checked
// against the naive double-precision reference (attnjit_variant_reference).
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnjit/attnjit.hpp"
#include "commands.hpp"
#include "failure.hpp"
#include "launch_plan_text.hpp"
#include "option_checks.hpp"
#include "public_variant.hpp"
#include "testkit/compare.hpp"
#include "testkit/device_memory.hpp"
#include "testkit/example_inputs.hpp"
#include "testkit/host_problem.hpp"
#include "testkit/placement.hpp"
#include "testkit/tile_census.hpp"
#include "tile_map.hpp"
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
  bool tile_map = false;
  int tile_map_batch = 0, tile_map_head = 0;  // whose tiles --tile-map draws
  std::vector<std::string> fills;             // --fill NAME=F[,F...]
};

// The tiles of one (batch, head) as a picture, under the forward line: the mask's block
// sparsity as the kernel that ran sees it.
void print_tile_map(attnjit_variant* variant, const attnjit_forward_args& host_args, int batch,
                    int head) {
  constexpr int kMaxCells = 64;
  int rows = 0, cols = 0, tile_q = 0, tile_kv = 0;
  c::check(attnjit_variant_tile_map(nullptr, 0, &rows, &cols, &tile_q, &tile_kv, variant,
                                    &host_args, batch, head, nullptr));
  std::vector<unsigned char> map(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  c::check(attnjit_variant_tile_map(map.data(), map.size(), &rows, &cols, nullptr, nullptr, variant,
                                    &host_args, batch, head, nullptr));
  const TileMapPicture picture = draw_tile_map(map, rows, cols, kMaxCells);
  const std::string cell =
      picture.tiles_per_cell == 1
          ? std::string("a character per tile")
          : fmt::format("a character per {0}x{0} tiles", picture.tiles_per_cell);
  fmt::print(
      "  tiles    batch {}, head {}: {} x {} tiles of {}x{}, {}: '#' full, '.' empty, "
      "'+' partial or mixed\n",
      batch, head, rows, cols, tile_q, tile_kv, cell);
  for (const std::string& line : picture.lines) fmt::print("           {}\n", line);
}

// --fill NAME=F[,F...]: the rank-1 int32 tensor NAME holds lengths, element j the fraction
// F[j % n] of kv_len, rounded (per-sequence cache lengths, read as `len[b]`). Keyed by name.
std::map<std::string, std::vector<double>> parse_fills(const std::vector<std::string>& specs,
                                                       const attnjit_signature& signature) {
  std::map<std::string, std::vector<double>> fills;
  for (const std::string& spec : specs) {
    const std::size_t equals = spec.find('=');
    const std::string name = spec.substr(0, equals);
    const attnjit_tensor_decl* decl = nullptr;
    for (int i = 0; i < signature.num_tensors; ++i) {
      if (name == signature.tensors[i].name) decl = &signature.tensors[i];
    }
    if (decl == nullptr || decl->rank != 1 || decl->type != ATTNJIT_TENSOR_INT32) {
      fail(ATTNJIT_ERROR_INVALID_ARGUMENT,
           "--fill {}: '{}' is not a declared rank-1 int32 tensor (--tensor {}:int32[1])", spec,
           name, name.empty() ? "NAME" : name);
    }
    std::vector<double> fractions;
    std::size_t at = equals == std::string::npos ? spec.size() : equals + 1;
    while (at < spec.size()) {
      const std::size_t comma = std::min(spec.find(',', at), spec.size());
      const std::string text = spec.substr(at, comma - at);
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0') {
        fail(ATTNJIT_ERROR_INVALID_ARGUMENT,
             "--fill {}: '{}' is not a number (e.g. --fill {}=0.75,0.25)", spec, text, name);
      }
      fractions.push_back(value);
      at = comma + 1;
    }
    fills[name] = std::move(fractions);
  }
  return fills;
}

// Host data for each declared tensor: rank-1 int32 tensors hold sorted document ids (four
// documents) or, with --fill, lengths; other int32 tensors random ids in [0, 4), float32 tensors
// uniform [-1, 1).
struct HostTensorData {
  std::vector<std::int32_t> words;
  std::int64_t dims[2] = {1, 1};
};

std::vector<HostTensorData> make_tensors(const attnjit_signature& signature,
                                         const testkit::Shape& shape, std::uint64_t seed,
                                         const std::map<std::string, std::vector<double>>& fills) {
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  std::vector<HostTensorData> out;
  for (int i = 0; i < signature.num_tensors; ++i) {
    const attnjit_tensor_decl& decl = signature.tensors[i];
    HostTensorData t;
    if (decl.rank == 1) {
      t.dims[0] = std::max(shape.q_len, shape.kv_len);
    } else {
      t.dims[0] = shape.num_heads_q;
      t.dims[1] = std::int64_t{shape.q_len} + shape.kv_len;
    }
    t.words.resize(static_cast<std::size_t>(t.dims[0] * t.dims[1]));
    if (const auto fill = fills.find(decl.name); fill != fills.end()) {
      try {
        t.words = testkit::filled_lengths(fill->second, t.words.size(), shape.kv_len);
      } catch (const std::invalid_argument& error) {
        fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "--fill {}: {} (e.g. --fill {}=0.75,0.25)", decl.name,
             error.what(), decl.name);
      }
    } else if (decl.type == ATTNJIT_TENSOR_INT32) {
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
void check_host_memory(const testkit::Shape& shape, attnjit_dtype dtype) {
  const auto tensor_bytes = [&](int heads, int len) {
    return static_cast<long double>(shape.batch) * heads * len * shape.head_dim *
           static_cast<long double>(testkit::dtype_size(dtype));
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
    fail(ATTNJIT_ERROR_OUT_OF_MEMORY,
         "the problem needs {:.1f} GiB of host memory for q, k, v, out and lse; this machine has "
         "{:.1f} GiB (use smaller --batch, --heads, --q-len, --kv-len or --head-dim)",
         static_cast<double>(needed / (1ull << 30)), static_cast<double>(available / (1ull << 30)));
  }
}

// The reference's out and lse for the host call, compared with what the backend wrote.
bool check_against_reference(attnjit_variant* variant, const attnjit_forward_args& host_args,
                             const testkit::HostProblem& problem, attnjit_dtype dtype) {
  const testkit::Shape& shape = problem.shape;
  const std::size_t rows = static_cast<std::size_t>(shape.batch) * shape.num_heads_q * shape.q_len;
  std::vector<double> expected_out(rows * static_cast<std::size_t>(shape.head_dim));
  std::vector<double> expected_lse(rows);
  c::check(
      attnjit_variant_reference(variant, &host_args, expected_out.data(), expected_lse.data()));
  const auto out_stats =
      testkit::compare_strided(problem.out.data(), dtype, problem.out.strides(), shape.batch,
                               shape.num_heads_q, shape.q_len, shape.head_dim, expected_out);
  const auto lse_stats = testkit::compare_lse(shape.batch, shape.num_heads_q, shape.q_len,
                                              problem.lse.data(), expected_lse);
  const bool ok = testkit::within(out_stats, testkit::output_tolerance(dtype)) &&
                  testkit::within(lse_stats, testkit::lse_tolerance());
  fmt::print("  check    out {}\n           lse {}\n           {}\n", testkit::describe(out_stats),
             testkit::describe(lse_stats), ok ? "PASS" : "FAIL");
  return ok;
}

void run(const RunOptions& o) {
  const c::SignaturePtr signature = o.variant.signature();
  const std::vector<attnjit_scalar> params = o.variant.param_values(*signature);
  const attnjit_dtype dtype = o.variant.c_dtype();
  const testkit::Shape shape{o.batch,
                             o.heads,
                             o.kv_heads > 0 ? o.kv_heads : o.heads,
                             o.q_len,
                             o.kv_len > 0 ? o.kv_len : o.q_len,
                             o.variant.head_dim};
  check_host_memory(shape, dtype);
  testkit::ProblemOptions problem_options;
  problem_options.dtype = dtype;
  problem_options.layout = o.layout == "blhd" ? ATTNJIT_LAYOUT_BLHD : ATTNJIT_LAYOUT_BHLD;
  problem_options.seed = o.seed;
  testkit::HostProblem problem = testkit::make_problem(shape, problem_options);
  const std::vector<HostTensorData> tensors =
      make_tensors(*signature, shape, o.seed, parse_fills(o.fills, *signature));

  const c::RuntimePtr runtime = create_runtime(o.device == "cpu"    ? ATTNJIT_BACKEND_CPU
                                               : o.device == "cuda" ? ATTNJIT_BACKEND_CUDA
                                                                    : ATTNJIT_BACKEND_AUTO);
  const bool on_gpu = attnjit_runtime_backend(runtime.get()) == ATTNJIT_BACKEND_CUDA;
  const c::VariantPtr variant = create_variant(runtime.get(), o.variant.desc(*signature));
  const auto prepare_start = std::chrono::steady_clock::now();
  c::check(attnjit_variant_prepare(variant.get()));
  const double prepare_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - prepare_start)
          .count();

  testkit::ProblemPlacement placement(problem, on_gpu);
  std::vector<attnjit_tensor_arg> placed_tensors, host_tensors;
  for (const auto& t : tensors) {
    placed_tensors.push_back(
        {placement.place(t.words.data(), t.words.size() * 4), {t.dims[0], t.dims[1]}});
    host_tensors.push_back({t.words.data(), {t.dims[0], t.dims[1]}});
  }
  const attnjit_forward_args args = testkit::with_values(placement.args(), params, placed_tensors);
  attnjit_launch_plan plan;
  attnjit_launch_plan_init(&plan);
  c::check(attnjit_variant_launch_plan(&plan, variant.get(), &args));
  const std::string reason =
      c::sized_text([&](char* buffer, std::size_t capacity, std::size_t* length) {
        return attnjit_variant_launch_reason(buffer, capacity, length, variant.get(), &args);
      });

  std::vector<double> times;
  for (int i = 0; i < std::max(1, o.repeat); ++i) {
    const auto start = std::chrono::steady_clock::now();
    c::check(attnjit_forward(variant.get(), &args));
    if (on_gpu) testkit::synchronize_device();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  placement.fetch_results();

  // The same call on the host buffers, for the census and the reference check. The census
  // counts the tiles of the kernel that ran: the GPU kernel's, or the CPU reference's.
  const attnjit_forward_args host_args =
      testkit::with_values(problem.forward_args(), params, host_tensors);
  attnjit_tile_census census{};
  c::check(attnjit_variant_tile_census(&census, variant.get(), &host_args, nullptr));
  attnjit_variant_desc desc = o.variant.desc(*signature);
  attnjit_lowered_expressions* lowered_raw = nullptr;
  c::check(attnjit_expressions_lower(&lowered_raw, &desc));
  const c::LoweredExpressionsPtr lowered(lowered_raw);

  fmt::print("attnjit run: {} backend, {}, B={} Hq={} Hkv={} Lq={} Lkv={} D={}, layout {}\n",
             on_gpu ? "cuda" : "cpu", testkit::dtype_name(dtype), shape.batch, shape.num_heads_q,
             shape.num_heads_kv, shape.q_len, shape.kv_len, shape.head_dim, o.layout);
  fmt::print("  mask     {}\n  score    {}\n", lowered->canonical_mask, lowered->canonical_score);
  fmt::print("  prepare  {:.1f} ms\n", prepare_ms);
  fmt::print("  kernel   {}\n", describe_launch_plan(plan, reason, "           "));
  fmt::print(
      "  forward  {:.3f} ms (median of {}), {:.1f}% of {}x{} tiles skipped, {:.1f}% of "
      "pairs kept\n",
      times[times.size() / 2], times.size(), 100.0 * testkit::skipped_fraction(census),
      census.tile_q, census.tile_kv, 100.0 * testkit::kept_fraction(census));
  if (o.tile_map) print_tile_map(variant.get(), host_args, o.tile_map_batch, o.tile_map_head);

  const double work = static_cast<double>(shape.batch) * shape.num_heads_q * shape.q_len *
                      static_cast<double>(shape.kv_len) * shape.head_dim;
  if (!o.check) return;
  if (work > 4e9) {
    fmt::print(
        "  check    skipped: the naive reference would take too long (use a smaller "
        "problem)\n");
    return;
  }
  if (!check_against_reference(variant.get(), host_args, problem, dtype)) {
    throw CLI::RuntimeError(1);
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "run",
      "Run one variant on random inputs; report the time and a check against the naive "
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
  command->add_flag("--tile-map", o->tile_map,
                    "draw the tiles of one (batch, head), 0 and 0 unless given: full, empty or "
                    "partial (block sparsity)");
  // Note: either implies --tile-map.
  command->add_option("--tile-map-batch", o->tile_map_batch, "the batch --tile-map draws")
      ->check(zero_or_more)
      ->each([o](const std::string&) { o->tile_map = true; });
  command->add_option("--tile-map-head", o->tile_map_head, "the query head --tile-map draws")
      ->check(zero_or_more)
      ->each([o](const std::string&) { o->tile_map = true; });
  command->add_option("--fill", o->fills,
                      "NAME=F[,F...]: the rank-1 int32 tensor NAME holds lengths, element j the "
                      "fraction F[j % n] of --kv-len (per-sequence cache lengths, len[b])");
  command->callback([o] { run(*o); });
}

}  // namespace attnjit::cli
