// `attnjit bench`: times the variants of a manifest on the current GPU with CUDA events and
// reports median time, TFLOP/s over unmasked pairs only, the memory a call reads and writes per
// second, the fraction of tiles skipped and the host time of one call (attnjit's checks and
// launches plus the driver's). Prefill by default; --q-len 1 (with --kv-heads for GQA) times
// decoding steps; --page-size N reads the keys and values from a paged cache (the same buffers as
// pools of pages, shuffled by a page table); --seq-lens packs variable-length prefills, --kv-lens
// gives a ragged batch's key counts, --q-lens a chunked prefill's packed queries over the cache.
// --json FILE also writes the rows, with the device and the shape, for scripts.
// The variants run through the public API; device memory and events come from the test kit.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "attnjit/attnjit.hpp"
#include "commands.hpp"
#include "failure.hpp"
#include "launch_plan_text.hpp"
#include "printable.hpp"
#include "public_variant.hpp"
#include "testkit/device_memory.hpp"
#include "testkit/example_inputs.hpp"
#include "testkit/host_data.hpp"
#include "testkit/host_problem.hpp"
#include "testkit/tile_census.hpp"

namespace attnjit::cli {
namespace {

struct BenchOptions {
  std::string manifest;  // empty: the standard manifest
  std::vector<std::string> variants;
  int seq_len = 4096;        // the keys' length, and the queries' unless q_len is set
  std::optional<int> q_len;  // default: seq_len
  int batch = 4;
  int heads = 16;
  std::optional<int> kv_heads;  // default: heads
  int head_dim = 128;
  std::string dtype = "bf16";
  std::optional<std::string> layout;  // bhld (default) or blhd
  std::optional<int> page_size;       // a paged cache of pages of this many rows
  std::vector<int> seq_lens;          // variable-length sequences, packed (batch: their count)
  std::vector<int> kv_lens;  // per-sequence key counts over the padded cache (batch: their count)
  std::vector<int> q_lens;   // per-sequence packed queries over the cache (batch: their count)
  int warmup = 5;
  int iterations = 30;
  std::string json_path;  // empty: no JSON
};

// Sequences' rows packed one after another into [total, heads, head_dim] tensors (BLHD), with
// their starts (FlashAttention's cu_seqlens) on the GPU: a variable-length run's prefills
// (--seq-lens: queries and keys alike), or a chunked prefill's new queries (--q-lens).
struct SequenceLayout {
  std::vector<int> lens;  // empty: uniform sequences
  std::vector<std::int32_t> starts;
  int total = 0;
  int longest = 0;
  testkit::DeviceBuffer device_starts;
};

// `lens` packed; `flag` names them in errors. A sequence of no rows is allowed where `min_len` is
// 0 (a chunked prefill's sequence without new queries), but not a run of no rows at all.
SequenceLayout packed_layout(const std::vector<int>& lens, const char* flag, int min_len) {
  SequenceLayout layout;
  layout.starts.push_back(0);
  for (const int len : lens) {
    if (len < min_len) {
      fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "{} must be {}; got {}", flag,
           min_len > 0 ? "positive" : "at least 0", len);
    }
    if (len > std::numeric_limits<int>::max() - layout.starts.back()) {
      fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "{} add up to more than 2^31 - 1 rows", flag);
    }
    layout.starts.push_back(layout.starts.back() + len);
    layout.longest = std::max(layout.longest, len);
  }
  if (layout.longest == 0) fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "{} are all 0: no rows", flag);
  layout.lens = lens;
  layout.total = layout.starts.back();
  return layout;
}

SequenceLayout sequence_layout(const BenchOptions& options) {
  if (options.seq_lens.empty()) return {};
  if (options.page_size || options.q_len || !options.q_lens.empty()) {
    fail(ATTNJIT_ERROR_INVALID_ARGUMENT,
         "--seq-lens gives each sequence's queries and keys: not with --page-size, --q-len or "
         "--q-lens");
  }
  return packed_layout(options.seq_lens, "--seq-lens", 1);
}

// A chunked prefill's packed queries (q_seq_starts): sequence b's --q-lens[b] new queries over its
// keys in the padded (or paged) cache of --seq-len rows, --kv-lens[b] of them (default: all).
SequenceLayout query_layout(const BenchOptions& options) {
  if (options.q_lens.empty()) return {};
  if (options.q_len) {
    fail(ATTNJIT_ERROR_INVALID_ARGUMENT,
         "--q-lens gives each sequence's packed queries: not with --q-len");
  }
  if (!options.kv_lens.empty() && options.kv_lens.size() != options.q_lens.size()) {
    fail(ATTNJIT_ERROR_INVALID_ARGUMENT,
         "--q-lens and --kv-lens count the same sequences; got {} and {}", options.q_lens.size(),
         options.kv_lens.size());
  }
  return packed_layout(options.q_lens, "--q-lens", 0);
}

void upload_starts(SequenceLayout& layout) {
  if (layout.lens.empty()) return;
  const std::size_t bytes = layout.starts.size() * sizeof(std::int32_t);
  layout.device_starts = testkit::DeviceBuffer(bytes);
  layout.device_starts.upload(layout.starts.data(), bytes);
}

// A run with per-sequence key counts (kv_seq_lens): decoding steps over a padded (or paged) cache
// of --seq-len rows whose sequences hold these many keys each; the batch is their count. Checked
// before the GPU is looked for.
struct KeyCounts {
  std::vector<int> lens;  // empty: every sequence holds --seq-len keys
  testkit::DeviceBuffer device_lens;
};

KeyCounts key_counts(const BenchOptions& options) {
  KeyCounts counts;
  if (options.kv_lens.empty()) return counts;
  if (!options.seq_lens.empty()) {
    fail(ATTNJIT_ERROR_INVALID_ARGUMENT,
         "--kv-lens counts keys over a padded cache; --seq-lens packs whole sequences: not both");
  }
  for (const int len : options.kv_lens) {
    if (len < 0 || len > options.seq_len) {
      fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "--kv-lens must be in [0, --seq-len {}]; got {}",
           options.seq_len, len);
    }
  }
  counts.lens = options.kv_lens;
  return counts;
}

// The counts on the GPU (once the runtime is up).
void upload_key_counts(KeyCounts& counts) {
  if (counts.lens.empty()) return;
  const std::size_t bytes = counts.lens.size() * sizeof(std::int32_t);
  counts.device_lens = testkit::DeviceBuffer(bytes);
  const std::vector<std::int32_t> lens(counts.lens.begin(), counts.lens.end());
  counts.device_lens.upload(lens.data(), bytes);
}

struct InputSet {
  testkit::DeviceBuffer q, k, v, out;
  testkit::DeviceBuffer page_table;  // a paged run's [batch, pages_per_sequence] int32
};

// `args` reading and writing `set`'s buffers (and, for a paged run, reading through its table).
attnjit_forward_args on_inputs(attnjit_forward_args args, InputSet& set) {
  args.q = set.q.get();
  args.k = set.k.get();
  args.v = set.v.get();
  args.out = set.out.get();
  if (args.kv_page_table != nullptr)
    args.kv_page_table = static_cast<const std::int32_t*>(set.page_table.get());
  return args;
}

// A paged run's cache: K and V of [batch, pages_per_sequence * page_size, heads, head_dim] (BLHD:
// kv_len rows a sequence, padded to whole pages) are pools of batch * pages_per_sequence pages of
// [page_size, heads, head_dim] (vLLM's NHD pages), handed to the sequences in a shuffled order,
// as a serving program's pools hold them after a while.
struct PagedLayout {
  int page_size = 0;  // 0: dense
  int pages_per_sequence = 0;
  int num_pages = 0;
};

PagedLayout paged_layout(const BenchOptions& options, int batch, int kv_len) {
  if (!options.page_size) return {};
  const int size = *options.page_size;
  if (size <= 0) {
    fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "--page-size must be positive (rows a page); got {}",
         size);
  }
  const int pages_per_sequence = (kv_len + size - 1) / size;  // the last one part-filled
  return {size, pages_per_sequence, batch * pages_per_sequence};
}

// Each set's page table: a permutation of the pools' pages, row b the pages of sequence b.
void attach_page_tables(std::vector<InputSet>& sets, const PagedLayout& paged) {
  std::vector<std::int32_t> table(static_cast<std::size_t>(paged.num_pages));
  for (std::size_t i = 0; i < sets.size(); ++i) {
    std::iota(table.begin(), table.end(), 0);
    std::mt19937 random(static_cast<std::uint32_t>(i) + 1);
    std::shuffle(table.begin(), table.end(), random);
    sets[i].page_table = testkit::DeviceBuffer(table.size() * sizeof(std::int32_t));
    sets[i].page_table.upload(table.data(), table.size() * sizeof(std::int32_t));
  }
}

attnjit_layout parse_layout(const std::optional<std::string>& text, const PagedLayout& paged,
                            const SequenceLayout& sequences, const SequenceLayout& queries) {
  if (paged.page_size > 0 || !sequences.lens.empty() || !queries.lens.empty()) {
    if (text && *text != "blhd") {
      fail(ATTNJIT_ERROR_INVALID_ARGUMENT,
           "{} reads [rows, heads, head_dim] tensors: --layout blhd only",
           paged.page_size > 0     ? "--page-size"
           : !queries.lens.empty() ? "--q-lens"
                                   : "--seq-lens");
    }
    return ATTNJIT_LAYOUT_BLHD;
  }
  return text && *text == "blhd" ? ATTNJIT_LAYOUT_BLHD : ATTNJIT_LAYOUT_BHLD;  // --layout's check
}

attnjit_dtype parse_dtype(const std::string& text) {
  if (text == "bf16" || text == "bfloat16") return ATTNJIT_DTYPE_BF16;
  if (text == "fp16" || text == "float16") return ATTNJIT_DTYPE_FP16;
  fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "unknown dtype '{}' (expected bf16 or fp16)",
       printable(text));
}

// Note: rotating through input sets whose total exceeds twice the L2 size keeps every timed
// call reading from HBM, as in a real model step (a decoding step's key/value cache too).
// q_bytes: Q and the output; kv_bytes: K and V each.
std::vector<InputSet> make_input_sets(std::size_t q_bytes, std::size_t kv_bytes,
                                      attnjit_dtype dtype, int l2_bytes) {
  const std::size_t set_bytes = 2 * q_bytes + 2 * kv_bytes;
  const std::size_t l2 = static_cast<std::size_t>(std::max(l2_bytes, 1));
  const int num_sets = static_cast<int>(std::clamp<std::size_t>(2 * l2 / set_bytes + 2, 2, 16));
  std::vector<InputSet> sets;
  std::vector<std::byte> host(std::max(q_bytes, kv_bytes));
  for (int i = 0; i < num_sets; ++i) {
    InputSet set{testkit::DeviceBuffer(q_bytes), testkit::DeviceBuffer(kv_bytes),
                 testkit::DeviceBuffer(kv_bytes), testkit::DeviceBuffer(q_bytes),
                 testkit::DeviceBuffer()};
    std::uint64_t stream = 0;
    for (testkit::DeviceBuffer* buffer : {&set.q, &set.k, &set.v}) {
      const std::size_t bytes = buffer == &set.q ? q_bytes : kv_bytes;
      testkit::fill_random(host.data(), dtype,
                           static_cast<std::int64_t>(bytes / testkit::dtype_size(dtype)),
                           static_cast<std::uint64_t>(i) * 3 + stream++);
      buffer->upload(host.data(), bytes);
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

// The K (or V) rows a call reads: of each sequence and key/value head, the keys an average query
// row of the sequence keeps (its census's kept pairs over its query rows). Exact for a decoding
// step, whose one query per head keeps the same keys across a GQA group; for a masked prefill it
// is below what the call must read (causal: half the keys per row on average, where every key is
// kept by some row), so its GB/s there is a lower bound, not a bandwidth.
// `census` covers the sequences' q_rows queries of each of heads_q heads.
double kv_rows_read(int q_rows, int heads_q, int heads_kv, const attnjit_tile_census& census) {
  if (q_rows == 0) return 0.0;
  return static_cast<double>(heads_kv) * static_cast<double>(census.kept_pairs) /
         (static_cast<double>(heads_q) * q_rows);
}

// The bytes of Q and the output, and of `kv_rows` rows of K and of V.
double bytes_moved(double kv_rows, int head_dim, std::size_t q_bytes, std::size_t element_bytes) {
  return 2.0 * static_cast<double>(q_bytes) +
         2.0 * kv_rows * head_dim * static_cast<double>(element_bytes);
}

struct BenchTimes {
  double gpu_ms;   // median CUDA-event time of one call's kernels
  double host_us;  // median wall time of one attnjit_forward call: checks, summaries, launch
};

template <typename T>
T median_of(std::vector<T> values) {
  std::nth_element(values.begin(), values.begin() + static_cast<long>(values.size() / 2),
                   values.end());
  return values[values.size() / 2];
}

// The medians of `iterations` timed calls, after `warmup` untimed ones, rotating through `sets`.
BenchTimes median_times(attnjit_variant* variant, attnjit_forward_args args,
                        std::vector<InputSet>& sets, int warmup, int iterations) {
  const auto on_set = [&](int i) {
    args = on_inputs(args, sets[static_cast<std::size_t>(i) % sets.size()]);
    return &args;
  };
  for (int i = 0; i < warmup; ++i) c::check(attnjit_forward(variant, on_set(i)));
  testkit::synchronize_device();
  // Note: every timed call gets its own pair of events and nothing waits until all are queued,
  // so while the GPU runs call i the host already checks and queues call i + 1: the events
  // bracket the kernels (summaries included), not the host-side checks and launch latency that
  // a wait after every call would put between the start event and the kernel.
  std::vector<std::unique_ptr<testkit::EventTimer>> timers;
  // The host time is the call alone, between the event records: with kernels of a millisecond
  // or more the launch queue never fills, so no call waits for the GPU.
  std::vector<double> host_us;
  for (int i = 0; i < iterations; ++i) timers.push_back(std::make_unique<testkit::EventTimer>());
  for (int i = 0; i < iterations; ++i) {
    const attnjit_forward_args* call = on_set(i);
    timers[static_cast<std::size_t>(i)]->start(nullptr);
    const auto host_start = std::chrono::steady_clock::now();
    c::check(attnjit_forward(variant, call));
    host_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_start)
            .count());
    timers[static_cast<std::size_t>(i)]->stop(nullptr);
  }
  std::vector<float> times;
  for (const auto& timer : timers) times.push_back(timer->elapsed_ms());
  return {median_of(std::move(times)), median_of(std::move(host_us))};
}

// Fails, naming the file and the reason, where --json could not be written (checked before the
// timings, which take minutes on a GPU; writing can still fail, and says so).
void check_json_writable(const std::string& path) {
  const std::filesystem::path file(path);
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  const bool writable = ::access(path.c_str(), F_OK) == 0 ? ::access(path.c_str(), W_OK) == 0
                                                          : ::access(dir.c_str(), W_OK | X_OK) == 0;
  if (!writable) {
    fail(ATTNJIT_ERROR_IO, "cannot write --json {}: {}", printable(path), std::strerror(errno));
  }
}

// Writes the run's JSON, or fails naming the file and the reason.
void write_json(const std::string& path, const nlohmann::json& run) {
  std::ofstream file(path);
  // Note: names come from manifests; bytes that are not UTF-8 are replaced rather than thrown on.
  file << run.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  file.close();
  if (!file) {
    fail(ATTNJIT_ERROR_IO, "cannot write --json {}: {}", printable(path), std::strerror(errno));
  }
}

void run_bench(const BenchOptions& options) {
  if (options.seq_len <= 0 || options.batch <= 0 || options.heads <= 0) {
    fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "--seq-len, --batch and --heads must be positive");
  }
  const int q_len = options.q_len.value_or(options.seq_len);
  const int kv_heads = options.kv_heads.value_or(options.heads);
  if (q_len <= 0 || kv_heads <= 0) {
    fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "--q-len and --kv-heads must be positive");
  }
  if (options.heads % kv_heads != 0) {
    fail(ATTNJIT_ERROR_INVALID_ARGUMENT,
         "--heads {} is not a multiple of --kv-heads {} (each key/value head serves a group of "
         "query heads)",
         options.heads, kv_heads);
  }
  if (options.iterations <= 0 || options.warmup < 0) {
    fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "--iters must be positive and --warmup not negative");
  }
  KeyCounts counts = key_counts(options);
  SequenceLayout sequences = sequence_layout(options);
  SequenceLayout queries = query_layout(options);
  const bool varlen = !sequences.lens.empty();
  const bool packed_queries = !queries.lens.empty();
  const int batch = packed_queries         ? static_cast<int>(queries.lens.size())
                    : !counts.lens.empty() ? static_cast<int>(counts.lens.size())
                                           : options.batch;
  const PagedLayout paged = paged_layout(options, batch, options.seq_len);
  const attnjit_layout layout = parse_layout(options.layout, paged, sequences, queries);
  if (!options.json_path.empty()) check_json_writable(options.json_path);
  const c::RuntimePtr runtime = create_runtime(ATTNJIT_BACKEND_CUDA);  // throws without a GPU
  const std::string arch = attnjit_runtime_device_arch(runtime.get());
  const testkit::DeviceProperties device = testkit::current_device_properties();
  upload_key_counts(counts);
  const attnjit_dtype dtype = parse_dtype(options.dtype);
  attnjit_manifest* raw_manifest = nullptr;
  c::check(attnjit_manifest_load(&raw_manifest,
                                 options.manifest.empty() ? nullptr : options.manifest.c_str()));
  const c::ManifestPtr manifest(raw_manifest);

  // Note: a variable-length run's shape is its sequences' count and the longest; its tensors
  // are one batch entry of their total rows. Packed queries: q is one entry of their total rows,
  // q_len the longest sequence's count.
  const testkit::Shape shape =
      varlen ? testkit::Shape{static_cast<int>(sequences.lens.size()),
                              options.heads,
                              kv_heads,
                              sequences.longest,
                              sequences.longest,
                              options.head_dim}
             : testkit::Shape{batch,           options.heads,
                              kv_heads,        packed_queries ? queries.longest : q_len,
                              options.seq_len, options.head_dim};
  const std::size_t element_bytes = testkit::dtype_size(dtype);
  const auto tensor_bytes = [&](int entries, int heads, int rows) {
    return static_cast<std::size_t>(entries) * static_cast<std::size_t>(heads) *
           static_cast<std::size_t>(rows) * static_cast<std::size_t>(shape.head_dim) *
           element_bytes;
  };
  const std::size_t q_bytes = varlen ? tensor_bytes(1, shape.num_heads_q, sequences.total)
                              : packed_queries
                                  ? tensor_bytes(1, shape.num_heads_q, queries.total)
                                  : tensor_bytes(shape.batch, shape.num_heads_q, shape.q_len);
  // Note: a paged run's pools hold whole pages, the last of each sequence part-filled.
  const std::size_t kv_bytes =
      varlen ? tensor_bytes(1, shape.num_heads_kv, sequences.total)
             : tensor_bytes(
                   shape.batch, shape.num_heads_kv,
                   paged.page_size > 0 ? paged.pages_per_sequence * paged.page_size : shape.kv_len);
  std::vector<InputSet> sets = make_input_sets(q_bytes, kv_bytes, dtype, device.l2_bytes);
  if (paged.page_size > 0) attach_page_tables(sets, paged);
  upload_starts(sequences);
  upload_starts(queries);

  fmt::print(
      "device {} ({}, {} SMs, L2 {} MiB); B={} H={}{} L={}{} D={} {}{}{}{}{}; {} input sets, "
      "median of {} runs after {} warm-up\n",
      device.name, arch, device.multiprocessors, std::max(device.l2_bytes, 1) >> 20, shape.batch,
      shape.num_heads_q,
      shape.num_heads_kv != shape.num_heads_q ? fmt::format(" over {}", shape.num_heads_kv) : "",
      shape.kv_len, shape.q_len != shape.kv_len ? fmt::format(" (queries {})", shape.q_len) : "",
      shape.head_dim, testkit::dtype_name(dtype), layout == ATTNJIT_LAYOUT_BLHD ? " blhd" : "",
      paged.page_size > 0
          ? fmt::format(", paged: {} pages of {} rows, shuffled", paged.num_pages, paged.page_size)
      : varlen ? fmt::format(", sequences of {} packed ({} rows)", fmt::join(sequences.lens, ","),
                             sequences.total)
               : "",
      packed_queries ? fmt::format(", queries {} packed ({} rows)", fmt::join(queries.lens, ","),
                                   queries.total)
                     : "",
      counts.lens.empty() ? "" : fmt::format(", key counts {}", fmt::join(counts.lens, ",")),
      sets.size(), options.iterations, options.warmup);
  nlohmann::json run = {{"device",
                         {{"name", device.name},
                          {"arch", arch},
                          {"multiprocessors", device.multiprocessors},
                          {"l2_bytes", device.l2_bytes}}},
                        {"shape",
                         {{"batch", shape.batch},
                          {"num_heads_q", shape.num_heads_q},
                          {"num_heads_kv", shape.num_heads_kv},
                          {"q_len", shape.q_len},
                          {"kv_len", shape.kv_len},
                          {"head_dim", shape.head_dim},
                          {"dtype", testkit::dtype_name(dtype)},
                          {"layout", layout == ATTNJIT_LAYOUT_BLHD ? "blhd" : "bhld"},
                          {"page_size", paged.page_size}}},
                        {"warmup", options.warmup},
                        {"iterations", options.iterations},
                        {"input_sets", sets.size()},
                        {"rows", nlohmann::json::array()}};
  if (varlen) run["shape"]["seq_lens"] = sequences.lens;
  if (packed_queries) run["shape"]["q_lens"] = queries.lens;
  if (!counts.lens.empty()) run["shape"]["kv_lens"] = counts.lens;
  fmt::print("{:<18} {:>10} {:>10} {:>8} {:>14} {:>9} {:>8}  {}\n", "variant", "median ms",
             "TFLOP/s", "GB/s", "unmasked pairs", "skipped", "host us", "kernel");

  int benchmarked = 0;
  for (std::size_t v = 0; v < attnjit_manifest_count(manifest.get()); ++v) {
    const attnjit_manifest_variant& mv = *attnjit_manifest_variant_at(manifest.get(), v);
    if (!options.variants.empty() && std::find(options.variants.begin(), options.variants.end(),
                                               mv.name) == options.variants.end()) {
      continue;
    }
    ++benchmarked;
    const c::VariantPtr variant =
        create_variant(runtime.get(), testkit::manifest_variant_desc(mv, dtype, options.head_dim));
    c::check(attnjit_variant_prepare(variant.get()));
    if (paged.page_size > 0 || varlen || packed_queries || !counts.lens.empty()) {
      c::check(attnjit_variant_prepare_paged(variant.get()));
    }
    const testkit::ExampleInputs inputs =
        testkit::example_inputs(mv, varlen ? sequences.longest : options.seq_len, options.heads);
    const testkit::DeviceTensors device_tensors = testkit::upload_tensors(inputs);
    attnjit_forward_args call;
    attnjit_forward_args_init(&call);
    call.q_dtype = call.k_dtype = call.v_dtype = dtype;
    call.batch = shape.batch;
    call.num_heads_q = shape.num_heads_q;
    call.num_heads_kv = shape.num_heads_kv;
    call.q_len = shape.q_len;
    call.kv_len = shape.kv_len;
    call.layout = layout;
    // The census below reads only the shape and the per-call tensors: the dense call serves it.
    attnjit_forward_args timed_call =
        testkit::with_values(call, inputs.params, device_tensors.args);
    if (paged.page_size > 0) {
      timed_call.kv_page_table =  // on_inputs takes each set's own
          static_cast<const std::int32_t*>(sets[0].page_table.get());
      timed_call.kv_page_table_width = paged.pages_per_sequence;
      timed_call.kv_page_size = paged.page_size;
      timed_call.kv_num_pages = paged.num_pages;
    }
    if (varlen) {
      const auto* starts = static_cast<const std::int32_t*>(sequences.device_starts.get());
      timed_call.q_seq_starts = timed_call.kv_seq_starts = starts;
      timed_call.q_total = timed_call.kv_total = sequences.total;
    }
    if (packed_queries) {
      timed_call.q_seq_starts = static_cast<const std::int32_t*>(queries.device_starts.get());
      timed_call.q_total = queries.total;
    }
    if (!counts.lens.empty()) {
      timed_call.kv_seq_lens = static_cast<const std::int32_t*>(counts.device_lens.get());
    }
    const BenchTimes times =
        median_times(variant.get(), timed_call, sets, options.warmup, options.iterations);
    const double ms = times.gpu_ms;

    // The census reads only the per-call tensors, from the host; q, k, v, out are not read. A
    // run of variable-length sequences or key counts has the sum of its sequences' (a sequence
    // without keys has none). Sequence b's is that of a call of b + 1 sequences at its lengths
    // less that of the first b: the expressions see b as its batch index, so a per-batch tensor
    // gives its own entry (`len[b]`). Note: b * b sequences' census in all, cheap next to a
    // call's compile for the batches the bench takes.
    const attnjit_forward_args census_call =
        on_inputs(testkit::with_values(call, inputs.params, inputs.tensors), sets[0]);
    attnjit_tile_census census{};
    double kv_rows = 0.0;  // K (or V) rows read: see kv_rows_read
    if (varlen || packed_queries || !counts.lens.empty()) {
      const auto keys_of = [&](int b) {
        return varlen ? sequences.lens[b] : counts.lens.empty() ? options.seq_len : counts.lens[b];
      };
      const auto queries_of = [&](int b) {
        return varlen ? sequences.lens[b] : packed_queries ? queries.lens[b] : q_len;
      };
      for (int b = 0; b < shape.batch; ++b) {
        if (keys_of(b) == 0 || queries_of(b) == 0) continue;
        attnjit_forward_args upto = census_call;
        upto.kv_len = keys_of(b);
        upto.q_len = queries_of(b);
        const auto census_of = [&](int sequences_upto) {
          attnjit_tile_census part{};
          if (sequences_upto == 0) return part;
          upto.batch = sequences_upto;
          c::check(attnjit_variant_tile_census(&part, variant.get(), &upto, nullptr));
          return part;
        };
        const attnjit_tile_census with = census_of(b + 1), before = census_of(b);
        attnjit_tile_census own{};
        own.tiles = with.tiles - before.tiles;
        own.empty = with.empty - before.empty;
        own.kept_pairs = with.kept_pairs - before.kept_pairs;
        own.total_pairs = with.total_pairs - before.total_pairs;
        census.tiles += own.tiles;
        census.empty += own.empty;
        census.kept_pairs += own.kept_pairs;
        census.total_pairs += own.total_pairs;
        kv_rows += kv_rows_read(upto.q_len, shape.num_heads_q, shape.num_heads_kv, own);
      }
    } else {
      c::check(attnjit_variant_tile_census(&census, variant.get(), &census_call, nullptr));
      kv_rows = kv_rows_read(shape.q_len, shape.num_heads_q, shape.num_heads_kv, census);
    }
    // FLOPs = 4 * D * unmasked pairs (two matmuls, multiply-add = 2), pairs summed over B and H.
    const double flops = 4.0 * options.head_dim * static_cast<double>(census.kept_pairs);
    // Note: after the timed calls, so it names the kernel they ran (the short-rows rule
    // remembers its decision for the call's shape and parameters).
    const attnjit_forward_args plan_call = on_inputs(timed_call, sets[0]);
    attnjit_launch_plan plan;
    attnjit_launch_plan_init(&plan);
    c::check(attnjit_variant_launch_plan(&plan, variant.get(), &plan_call));
    const double seconds = ms * 1e-3;
    const double tflops = flops / seconds / 1e12;
    const double gbs = bytes_moved(kv_rows, shape.head_dim, q_bytes, element_bytes) / seconds / 1e9;
    run["rows"].push_back({{"variant", mv.name},
                           {"median_ms", ms},
                           {"tflops", tflops},
                           {"gb_per_s", gbs},
                           {"kept_pairs", census.kept_pairs},
                           {"skipped_fraction", testkit::skipped_fraction(census)},
                           {"host_us", times.host_us},
                           {"kernel", launch_plan_name(plan)}});
    fmt::print("{:<18} {:>10.4f} {:>10.1f} {:>8.0f} {:>14.4g} {:>8.1f}% {:>8.1f}  {}\n",
               printable(mv.name), ms, tflops, gbs, static_cast<double>(census.kept_pairs),
               100.0 * testkit::skipped_fraction(census), times.host_us, launch_plan_name(plan));
  }
  if (benchmarked == 0) {
    fail(ATTNJIT_ERROR_INVALID_ARGUMENT, "no variant of {} matches --variant",
         printable(attnjit_manifest_source(manifest.get())));
  }
  if (!options.json_path.empty()) write_json(options.json_path, run);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* bench = app.add_subcommand(
      "bench", "Time the variants of a manifest on the GPU (median of CUDA-event timings)");
  bench->add_option("--manifest", options->manifest, "Manifest file (default: the standard one)");
  bench->add_option("--variant", options->variants, "Only these variants (repeatable)");
  bench->add_option("--seq-len", options->seq_len, "Key length, and query length unless --q-len")
      ->capture_default_str();
  bench->add_option("--q-len", options->q_len,
                    "Query length, e.g. 1 for decoding steps (default: --seq-len)");
  bench->add_option("--batch", options->batch, "Batch size")->capture_default_str();
  bench->add_option("--heads", options->heads, "Query heads")->capture_default_str();
  bench->add_option("--kv-heads", options->kv_heads,
                    "Key/value heads, dividing --heads (GQA; default: --heads)");
  bench->add_option("--head-dim", options->head_dim, "Head dimension")->capture_default_str();
  bench->add_option("--dtype", options->dtype, "bf16 or fp16")->capture_default_str();
  bench
      ->add_option("--layout", options->layout,
                   "bhld ([B, H, L, D], the default) or blhd ([B, L, H, D])")
      ->check(CLI::IsMember({"bhld", "blhd"}));
  bench->add_option("--page-size", options->page_size,
                    "Read the keys and values from a paged cache of pages of this many rows (any "
                    "count; pools of [pages, page_size, heads, head_dim] in a shuffled order, "
                    "each sequence's last page part-filled where the size does not divide "
                    "--seq-len; layout blhd)");
  bench
      ->add_option("--seq-lens", options->seq_lens,
                   "Variable-length prefills: each sequence's length (queries and keys), "
                   "comma-separated; packed without padding (layout blhd), the batch their count")
      ->delimiter(',');
  bench
      ->add_option("--kv-lens", options->kv_lens,
                   "Per-sequence key counts over the padded (or paged) cache of --seq-len rows "
                   "(kv_seq_lens: decoding steps of a ragged batch with --q-len), "
                   "comma-separated; the batch their count")
      ->delimiter(',');
  bench
      ->add_option("--q-lens", options->q_lens,
                   "A chunked prefill's new queries: each sequence's count (0 allowed), "
                   "comma-separated, packed without padding (q_seq_starts; layout blhd) over its "
                   "keys in the padded (or paged) cache of --seq-len rows (--kv-lens of them, or "
                   "all); the batch their count")
      ->delimiter(',');
  bench->add_option("--warmup", options->warmup, "Untimed calls first")->capture_default_str();
  bench->add_option("--iters", options->iterations, "Timed calls")->capture_default_str();
  bench->add_option("--json", options->json_path,
                    "Also write the rows, the device and the shape to this JSON file");
  bench->callback([options] {
    try {
      run_bench(*options);
    } catch (const c::Error& error) {
      if (error.status() != ATTNJIT_ERROR_NO_DEVICE &&
          error.status() != ATTNJIT_ERROR_UNSUPPORTED) {
        throw;
      }
      fmt::print(stderr, "attnjit bench needs a CUDA GPU (compute capability 8.0+): {}\n",
                 error.what());
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace attnjit::cli
