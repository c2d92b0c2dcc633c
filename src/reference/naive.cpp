#include "reference/naive.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.hpp"
#include "expr/evaluate.hpp"
#include "reference/attention.hpp"
#include "reference/row_math.hpp"

namespace attnjit::reference {
namespace {

std::vector<double> load_rows_as_double(const void* base, DType dtype, const Strides& strides,
                                        int b, int h, int len, int head_dim) {
  std::vector<double> rows(static_cast<std::size_t>(len) * head_dim);
  std::vector<float> row(static_cast<std::size_t>(head_dim));
  for (int i = 0; i < len; ++i) {
    load_row(base, dtype, b * strides.batch + h * strides.head + i * strides.row, head_dim,
             row.data());
    std::copy(row.begin(), row.end(), rows.begin() + static_cast<std::ptrdiff_t>(i) * head_dim);
  }
  return rows;
}

// All kv_len rows of a key or value tensor (load_kv_row: paged or not).
std::vector<double> load_kv_rows_as_double(const AttentionBuffers& buffers, const void* base,
                                           DType dtype, const Strides& strides, int b, int h,
                                           int len, int head_dim) {
  std::vector<double> rows(static_cast<std::size_t>(len) * head_dim);
  std::vector<float> row(static_cast<std::size_t>(head_dim));
  for (int i = 0; i < len; ++i) {
    load_kv_row(buffers, base, dtype, strides, b, h, i, head_dim, row.data());
    std::copy(row.begin(), row.end(), rows.begin() + static_cast<std::ptrdiff_t>(i) * head_dim);
  }
  return rows;
}

}  // namespace

void naive_attention(const expr::Expression& mask, const expr::Expression& score,
                     const VariantArgs& args, const AttentionShape& shape,
                     const AttentionBuffers& buffers, std::vector<double>& out,
                     std::vector<double>& lse, const SequenceLengths& lengths) {
  validate_variant_call(mask, score, args, shape, buffers);
  if (has_sequence_tables(buffers)) {
    throw_error(Status::invalid_argument,
                "the naive reference reads padded sequences (its lengths argument), not sequence "
                "tables: check each sequence as a call of its own (batch 1, its lengths)");
  }
  const auto length_of = [&](std::span<const int> lens, int b, int uniform) {
    return lens.empty() ? uniform : std::clamp(lens[static_cast<std::size_t>(b)], 0, uniform);
  };
  const double scale = effective_scale(shape, buffers);
  const int dim = shape.head_dim;
  const int group = shape.num_heads_q / shape.num_heads_kv;
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();

  out.assign(static_cast<std::size_t>(shape.batch) * shape.num_heads_q * shape.q_len * dim, 0.0);
  lse.assign(static_cast<std::size_t>(shape.batch) * shape.num_heads_q * shape.q_len, kNegInf);
  std::vector<double> scores(static_cast<std::size_t>(shape.kv_len));
  std::vector<bool> kept(static_cast<std::size_t>(shape.kv_len));

  for (int b = 0; b < shape.batch; ++b) {
    const int q_len = length_of(lengths.q_lens, b, shape.q_len);
    const int kv_len = length_of(lengths.kv_lens, b, shape.kv_len);
    for (int h = 0; h < shape.num_heads_q; ++h) {
      const auto q =
          load_rows_as_double(buffers.q, buffers.q_dtype, buffers.q_strides, b, h, q_len, dim);
      const auto k = load_kv_rows_as_double(buffers, buffers.k, buffers.k_dtype, buffers.k_strides,
                                            b, h / group, kv_len, dim);
      const auto v = load_kv_rows_as_double(buffers, buffers.v, buffers.v_dtype, buffers.v_strides,
                                            b, h / group, kv_len, dim);
      for (int i = 0; i < q_len; ++i) {
        double max_score = kNegInf;
        bool any_kept = false;
        for (int j = 0; j < kv_len; ++j) {
          const expr::ElementIndex at{b, h, i, j, q_len, kv_len, shape.num_heads_q};
          kept[j] = expr::evaluate_mask(mask, args, at);
          if (!kept[j]) continue;
          double dot = 0.0;
          for (int d = 0; d < dim; ++d) {
            dot +=
                q[static_cast<std::size_t>(i) * dim + d] * k[static_cast<std::size_t>(j) * dim + d];
          }
          double s = scale * dot;
          if (!score.is_identity()) {
            s = expr::evaluate_score(score, args, at, static_cast<float>(s));
          }
          scores[j] = s;
          any_kept = true;
          max_score = max_keeping_nan(max_score, s);  // a NaN score makes the row NaN
        }
        if (!any_kept || max_score == kNegInf) continue;  // zero output, lse -inf

        const std::size_t row =
            (static_cast<std::size_t>(b) * shape.num_heads_q + h) * shape.q_len + i;
        double* out_row = out.data() + row * dim;
        double sum = 0.0;
        for (int j = 0; j < kv_len; ++j) {
          if (!kept[j]) continue;
          const double p = std::exp(scores[j] - max_score);
          sum += p;
          for (int d = 0; d < dim; ++d) out_row[d] += p * v[static_cast<std::size_t>(j) * dim + d];
        }
        for (int d = 0; d < dim; ++d) out_row[d] /= sum;
        lse[row] = max_score + std::log(sum);
      }
    }
  }
}

}  // namespace attnjit::reference
