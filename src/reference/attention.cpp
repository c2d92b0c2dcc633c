#include "reference/attention.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/half.hpp"
#include "common/log.hpp"
#include "common/workers.hpp"
#include "expr/block_analysis.hpp"
#include "expr/evaluate.hpp"
#include "reference/row_math.hpp"

namespace attnjit::reference {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void validate_tensors(const char* which, const expr::Signature& signature,
                      const VariantArgs& args) {
  if (signature.tensors.size() > static_cast<std::size_t>(kMaxTensors)) {
    throw_error(Status::invalid_argument, "{}: {} tensors declared, at most {} are supported",
                which, signature.tensors.size(), kMaxTensors);
  }
  for (std::size_t i = 0; i < signature.tensors.size(); ++i) {
    const expr::TensorDecl& decl = signature.tensors[i];
    const TensorArg& tensor = args.tensors[i];
    const int elem = decl.elem == expr::TensorElemType::int32 ? kTensorInt32 : kTensorFloat32;
    const char* elem_name = decl.elem == expr::TensorElemType::int32 ? "int32" : "float32";
    if (tensor.data == nullptr) {
      throw_error(Status::invalid_argument, "{}: tensor '{}' (argument {}) has no data", which,
                  decl.name, i);
    }
    if (tensor.rank != decl.rank) {
      throw_error(Status::invalid_argument,
                  "{}: tensor '{}' (argument {}) is declared with rank {} but has rank {}", which,
                  decl.name, i, decl.rank, tensor.rank);
    }
    if (tensor.elem != elem) {
      throw_error(Status::invalid_argument,
                  "{}: tensor '{}' (argument {}) is declared {} but holds another element type",
                  which, decl.name, i, elem_name);
    }
    const bool dims_ok =
        tensor.dims[0] > 0 && (decl.rank == 2 ? tensor.dims[1] > 0 : tensor.dims[1] == 1);
    if (!dims_ok) {
      throw_error(Status::invalid_argument,
                  "{}: tensor '{}' (argument {}) has dims [{}, {}]; dims must be positive "
                  "(and dims[1] == 1 for a rank-1 tensor)",
                  which, decl.name, i, tensor.dims[0], tensor.dims[1]);
    }
  }
}

void validate_options(const ReferenceOptions& options) {
  if (options.tile_q <= 0 || options.tile_kv <= 0 || options.num_threads < 0) {
    throw_error(Status::invalid_argument,
                "reference options: tile_q ({}) and tile_kv ({}) must be positive and "
                "num_threads ({}) non-negative",
                options.tile_q, options.tile_kv, options.num_threads);
  }
}

// The caller's args with every summary the mask can use built fresh; summaries the caller left
// in args are dropped, since their granularity need not match our tiles.
struct ArgsWithSummaries {
  VariantArgs args;
  std::vector<expr::HostSummary> storage;  // `args` points into it
};

void build_summaries(const expr::Expression& mask, const AttentionShape& shape,
                     const ReferenceOptions& options, ArgsWithSummaries& result) {
  for (TensorArg& tensor : result.args.tensors) {
    tensor.q_summary = TensorSummary{nullptr, nullptr, 0, 0};
    tensor.kv_summary = TensorSummary{nullptr, nullptr, 0, 0};
  }
  const std::vector<expr::SummaryRequest>& requests = expr::summary_requests(mask);
  result.storage.reserve(requests.size());
  for (const expr::SummaryRequest& request : requests) {
    TensorArg& tensor = result.args.tensors[request.tensor];
    if (request.axis == expr::SummaryAxis::q) {
      result.storage.push_back(expr::build_summary(tensor, options.tile_q, shape.q_len));
      tensor.q_summary = result.storage.back().view();
    } else {
      result.storage.push_back(expr::build_summary(tensor, options.tile_kv, shape.kv_len));
      tensor.kv_summary = result.storage.back().view();
    }
  }
}

// What every worker reads; nothing in it changes during the call.
struct Job {
  const expr::Expression& mask;
  const expr::Expression& score;
  const VariantArgs& args;
  const AttentionShape& shape;
  const AttentionBuffers& buffers;
  int tile_q;
  int tile_kv;
  int num_q_tiles;
  float scale;
  bool score_is_identity;
};

// Per-worker buffers, allocated once per call and thread.
struct Scratch {
  std::vector<float> q;             // [tile_q, head_dim] in fp32
  std::vector<float> k_transposed;  // [head_dim, tile_kv] in fp32
  std::vector<float> v;             // [tile_kv, head_dim] in fp32
  std::vector<float> scores;        // [tile_q, tile_kv]
  std::vector<float> acc;           // [tile_q, head_dim] unnormalised output
  std::vector<float> row_max, row_sum;
  std::vector<float> row_buffer;  // [head_dim]

  Scratch(int tile_q, int tile_kv, int head_dim)
      : q(static_cast<std::size_t>(tile_q) * head_dim),
        k_transposed(static_cast<std::size_t>(tile_kv) * head_dim),
        v(static_cast<std::size_t>(tile_kv) * head_dim),
        scores(static_cast<std::size_t>(tile_q) * tile_kv),
        acc(static_cast<std::size_t>(tile_q) * head_dim),
        row_max(static_cast<std::size_t>(tile_q)),
        row_sum(static_cast<std::size_t>(tile_q)),
        row_buffer(static_cast<std::size_t>(head_dim)) {}
};

void load_rows(const void* base, DType dtype, const Strides& strides, int b, int h, int row_begin,
               int rows, int head_dim, float* dst) {
  for (int r = 0; r < rows; ++r) {
    const std::int64_t offset = b * strides.batch + h * strides.head +
                                static_cast<std::int64_t>(row_begin + r) * strides.row;
    load_row(base, dtype, offset, head_dim, dst + static_cast<std::size_t>(r) * head_dim);
  }
}

// Rows of a key or value tensor of the call of `buffers` (load_kv_row: paged or not).
void load_kv_rows(const AttentionBuffers& buffers, const void* base, DType dtype,
                  const Strides& strides, int b, int h, int row_begin, int rows, int head_dim,
                  float* dst) {
  for (int r = 0; r < rows; ++r) {
    load_kv_row(buffers, base, dtype, strides, b, h, row_begin + r, head_dim,
                dst + static_cast<std::size_t>(r) * head_dim);
  }
}

// K rows stored transposed, dst[d * ld + r], so a query row's scores against the whole tile are a
// sequence of vectorisable axpys.
void load_kv_rows_transposed(const AttentionBuffers& buffers, const void* base, DType dtype,
                             const Strides& strides, int b, int h, int row_begin, int rows,
                             int head_dim, int ld, float* dst, float* row_buffer) {
  for (int r = 0; r < rows; ++r) {
    load_kv_row(buffers, base, dtype, strides, b, h, row_begin + r, head_dim, row_buffer);
    for (int d = 0; d < head_dim; ++d) dst[static_cast<std::size_t>(d) * ld + r] = row_buffer[d];
  }
}

// Scores of one tile into scratch.scores (-inf where masked), then the online-softmax update of
// each row's running max, sum and unnormalised output.
void accumulate_tile(const Job& job, const TileBounds& tile, TileClass tile_class,
                     Scratch& scratch) {
  const int head_dim = job.shape.head_dim;
  const int rows = tile.q_end - tile.q_begin;
  const int cols = tile.kv_end - tile.kv_begin;
  for (int r = 0; r < rows; ++r) {
    const int q_idx = tile.q_begin + r;
    const float* q_row = scratch.q.data() + static_cast<std::size_t>(r) * head_dim;
    float* scores = scratch.scores.data() + static_cast<std::size_t>(r) * job.tile_kv;
    dot_rows_fp32(q_row, scratch.k_transposed.data(), job.tile_kv, head_dim, cols, scores);
    float tile_max = kNegInf;
    for (int c = 0; c < cols; ++c) {
      const expr::ElementIndex at{
          tile.b, tile.h, q_idx, tile.kv_begin + c, tile.q_len, tile.kv_len, job.shape.num_heads_q};
      if (tile_class == kTilePartial && !expr::evaluate_mask(job.mask, job.args, at)) {
        scores[c] = kNegInf;
        continue;
      }
      float s = job.scale * scores[c];
      if (!job.score_is_identity) s = expr::evaluate_score(job.score, job.args, at, s);
      scores[c] = s;
      tile_max = max_keeping_nan(tile_max, s);
    }

    // Note: a NaN score (from NaN or inf in q or k, or from the score expression) makes the
    // running max NaN, and with it the row's output and lse: a row it reaches never passes for
    // a masked one. A +inf score gives exp(inf - inf) = NaN below, to the same effect.
    float& running_max = scratch.row_max[r];
    const float new_max = max_keeping_nan(running_max, tile_max);
    if (new_max == kNegInf) continue;  // nothing kept in this row so far
    // Note: exp(-inf - finite) is 0, so a row's first kept tile starts from a clean slate.
    const float correction = std::exp(running_max - new_max);
    float* acc = scratch.acc.data() + static_cast<std::size_t>(r) * head_dim;
    if (correction != 1.0f) {
      for (int d = 0; d < head_dim; ++d) acc[d] *= correction;
    }
    float tile_sum = 0.0f;
    for (int c = 0; c < cols; ++c) {
      const float p = std::exp(scores[c] - new_max);
      if (p == 0.0f) continue;  // masked (or underflowed): contributes nothing
      tile_sum += p;
      axpy_fp32(p, scratch.v.data() + static_cast<std::size_t>(c) * head_dim, acc, head_dim);
    }
    scratch.row_sum[r] = scratch.row_sum[r] * correction + tile_sum;
    running_max = new_max;
  }
}

// Rows [q_begin, q_begin + rows) of sequence b (of `extent`), query head h.
void write_rows(const Job& job, int b, int h, const SequenceExtent& extent, int q_begin, int rows,
                Scratch& scratch) {
  const int head_dim = job.shape.head_dim;
  const AttentionBuffers& buffers = job.buffers;
  // Note: packed queries are rows of one batch entry; lse is then [num_heads_q, q_total].
  const bool packed = packs_queries(buffers);
  const std::int64_t out_batch = packed ? 0 : b;
  const std::int64_t lse_row0 =
      packed ? std::int64_t{h} * buffers.sequences.q_total + extent.q_row0
             : (static_cast<std::int64_t>(b) * job.shape.num_heads_q + h) * job.shape.q_len;
  for (int r = 0; r < rows; ++r) {
    const int q_idx = q_begin + r;
    float* acc = scratch.acc.data() + static_cast<std::size_t>(r) * head_dim;
    const float sum = scratch.row_sum[r];
    // Note: recognised by its max, not its sum, so that a NaN sum reaches the output.
    const bool empty_row = scratch.row_max[r] == kNegInf;  // nothing kept, or all kept -inf
    if (empty_row) {
      std::fill(acc, acc + head_dim, 0.0f);
    } else {
      for (int d = 0; d < head_dim; ++d) acc[d] /= sum;
    }
    const std::int64_t offset = out_batch * buffers.out_strides.batch +
                                h * buffers.out_strides.head +
                                (std::int64_t{extent.q_row0} + q_idx) * buffers.out_strides.row;
    store_row(buffers.out, buffers.q_dtype, offset, head_dim, acc);
    if (buffers.lse != nullptr) {
      buffers.lse[lse_row0 + q_idx] = empty_row ? kNegInf : scratch.row_max[r] + std::log(sum);
    }
  }
}

// One (batch, query head, q-tile) work item, start to finish.
void run_work_item(const Job& job, std::int64_t item, Scratch& scratch, TileStats& stats) {
  const AttentionShape& shape = job.shape;
  const AttentionBuffers& buffers = job.buffers;
  const int q_tile = static_cast<int>(item % job.num_q_tiles);
  const int h = static_cast<int>((item / job.num_q_tiles) % shape.num_heads_q);
  const int b = static_cast<int>(item / job.num_q_tiles / shape.num_heads_q);
  const int kv_head = h / (shape.num_heads_q / shape.num_heads_kv);
  const int q_begin = q_tile * job.tile_q;
  // The sequence's own rows and lengths (the call's, without sequence tables), clamped as the
  // kernels clamp them.
  const SequenceExtent extent = sequence_extent(buffers.sequences, b, shape.q_len, shape.kv_len);
  if (q_begin >= extent.q_len) return;  // a shorter sequence: no rows in this tile
  // Note: sums in 64 bits; q_begin + tile_q overflows int when q_len is near INT_MAX.
  const int q_end =
      static_cast<int>(std::min<std::int64_t>(std::int64_t{q_begin} + job.tile_q, extent.q_len));
  const int rows = q_end - q_begin;
  const int num_kv_tiles =
      static_cast<int>((std::int64_t{extent.kv_len} + job.tile_kv - 1) / job.tile_kv);

  load_rows(buffers.q, buffers.q_dtype, buffers.q_strides, packs_queries(buffers) ? 0 : b, h,
            extent.q_row0 + q_begin, rows, shape.head_dim, scratch.q.data());
  std::fill(scratch.acc.begin(), scratch.acc.end(), 0.0f);
  std::fill(scratch.row_max.begin(), scratch.row_max.end(), kNegInf);
  std::fill(scratch.row_sum.begin(), scratch.row_sum.end(), 0.0f);

  for (int kv_tile = 0; kv_tile < num_kv_tiles; ++kv_tile) {
    const int kv_begin = kv_tile * job.tile_kv;
    const int kv_end = static_cast<int>(
        std::min<std::int64_t>(std::int64_t{kv_begin} + job.tile_kv, extent.kv_len));
    const TileBounds tile{
        b, h, q_begin, q_end, kv_begin, kv_end, extent.q_len, extent.kv_len, shape.num_heads_q};
    const TileClass tile_class = expr::classify_tile(job.mask, job.args, tile);
    ++stats.total;
    if (tile_class == kTileEmpty) {
      ++stats.empty;
      continue;
    }
    ++(tile_class == kTileFull ? stats.full : stats.partial);
    // Note: packed keys' rows are rows of the packed tensors (kv_row_offset).
    load_kv_rows_transposed(buffers, buffers.k, buffers.k_dtype, buffers.k_strides, b, kv_head,
                            extent.kv_row0 + kv_begin, kv_end - kv_begin, shape.head_dim,
                            job.tile_kv, scratch.k_transposed.data(), scratch.row_buffer.data());
    load_kv_rows(buffers, buffers.v, buffers.v_dtype, buffers.v_strides, b, kv_head,
                 extent.kv_row0 + kv_begin, kv_end - kv_begin, shape.head_dim, scratch.v.data());
    accumulate_tile(job, tile, tile_class, scratch);
  }
  write_rows(job, b, h, extent, q_begin, rows, scratch);
}

}  // namespace


void validate_variant_call(const expr::Expression& mask, const expr::Expression& score,
                           const VariantArgs& args, const AttentionShape& shape,
                           const AttentionBuffers& buffers) {
  validate_problem(shape, buffers);
  if (mask.kind() != expr::ExprKind::mask || score.kind() != expr::ExprKind::score) {
    throw_error(Status::invalid_argument,
                "the mask must be parsed as a mask and the score as a score expression");
  }
  validate_tensors("mask", mask.signature(), args);
  validate_tensors("score", score.signature(), args);
}

TileStats attention_forward(const expr::Expression& mask, const expr::Expression& score,
                            const VariantArgs& args, const AttentionShape& shape,
                            const AttentionBuffers& buffers, const ReferenceOptions& options) {
  validate_variant_call(mask, score, args, shape, buffers);
  validate_options(options);

  ArgsWithSummaries prepared{args, {}};
  build_summaries(mask, shape, options, prepared);

  const int num_q_tiles =
      static_cast<int>((std::int64_t{shape.q_len} + options.tile_q - 1) / options.tile_q);
  const Job job{mask,
                score,
                prepared.args,
                shape,
                buffers,
                options.tile_q,
                options.tile_kv,
                num_q_tiles,
                effective_scale(shape, buffers),
                score.is_identity()};

  const std::int64_t num_items =
      static_cast<std::int64_t>(shape.batch) * shape.num_heads_q * num_q_tiles;
  std::int64_t num_threads = options.num_threads > 0
                                 ? options.num_threads
                                 : std::max<std::int64_t>(1, std::thread::hardware_concurrency());
  num_threads = std::min(num_threads, num_items);

  std::atomic<std::int64_t> next_item{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr first_error;
  std::vector<TileStats> worker_stats(static_cast<std::size_t>(num_threads));

  auto work = [&](std::size_t worker) {
    try {
      Scratch scratch(options.tile_q, options.tile_kv, shape.head_dim);
      TileStats stats;
      while (!failed.load(std::memory_order_relaxed)) {
        const std::int64_t item = next_item.fetch_add(1, std::memory_order_relaxed);
        if (item >= num_items) break;
        run_work_item(job, item, scratch, stats);
      }
      worker_stats[worker] = stats;
    } catch (...) {
      const std::lock_guard lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
      failed = true;
    }
  };
  num_threads = run_workers(static_cast<int>(num_threads), work);
  if (first_error) std::rethrow_exception(first_error);

  TileStats total;
  for (const TileStats& stats : worker_stats) {
    total.total += stats.total;
    total.empty += stats.empty;
    total.full += stats.full;
    total.partial += stats.partial;
  }
  log().debug("reference: {} tiles ({} empty, {} full, {} partial) on {} threads", total.total,
              total.empty, total.full, total.partial, num_threads);
  return total;
}

}  // namespace attnjit::reference
