#include "common/attention_problem.hpp"

#include <cmath>
#include <iterator>

#include "common/error.hpp"

namespace attnjit {

namespace {

struct DTypeNames {
  std::string_view name, short_name;
};

// Indexed by DType: the one place its names are spelled.
constexpr DTypeNames kDTypeNames[] = {
    {"bfloat16", "bf16"},
    {"float16", "fp16"},
    {"float32", "fp32"},
};

const DTypeNames& names_of(DType dtype) {
  const auto i = static_cast<std::size_t>(dtype);
  static constexpr DTypeNames kUnknown{"unknown", "?"};
  return i < std::size(kDTypeNames) ? kDTypeNames[i] : kUnknown;
}

}  // namespace

std::string_view dtype_name(DType dtype) { return names_of(dtype).name; }
std::string_view dtype_short_name(DType dtype) { return names_of(dtype).short_name; }

std::size_t dtype_size(DType dtype) { return dtype == DType::fp32 ? 4 : 2; }

Strides layout_strides(Layout layout, int num_heads, int len, int head_dim) {
  // Note: in 64 bits from the first product; num_heads * len alone can overflow int.
  const std::int64_t d = head_dim, heads = num_heads, rows = len;
  if (layout == Layout::bhld) return {heads * rows * d, rows * d, d};
  return {rows * heads * d, d, heads * d};
}

float effective_scale(const AttentionShape& shape, const AttentionBuffers& buffers) {
  if (buffers.scale != 0.0f) return buffers.scale;
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape.head_dim)));
}

void validate_problem(const AttentionShape& s, const AttentionBuffers& b) {
  if (s.batch <= 0 || s.num_heads_q <= 0 || s.num_heads_kv <= 0 || s.q_len <= 0 ||
      s.kv_len <= 0 || s.head_dim <= 0) {
    throw_error(Status::invalid_argument,
                "sizes must be positive: batch={} num_heads_q={} num_heads_kv={} q_len={} "
                "kv_len={} head_dim={}",
                s.batch, s.num_heads_q, s.num_heads_kv, s.q_len, s.kv_len, s.head_dim);
  }
  if (s.num_heads_q % s.num_heads_kv != 0) {
    throw_error(Status::invalid_argument,
                "num_heads_q ({}) must be a multiple of num_heads_kv ({})", s.num_heads_q,
                s.num_heads_kv);
  }
  if (b.q == nullptr || b.k == nullptr || b.v == nullptr || b.out == nullptr) {
    throw_error(Status::invalid_argument, "query, key, value and output buffers must not be null");
  }
  if (b.k_dtype != b.q_dtype || b.v_dtype != b.q_dtype) {
    throw_error(Status::invalid_argument,
                "query, key and value must have the same dtype; got {}, {} and {}",
                dtype_name(b.q_dtype), dtype_name(b.k_dtype), dtype_name(b.v_dtype));
  }
  const struct {
    const char* name;
    const Strides& strides;
  } all[] = {{"query", b.q_strides}, {"key", b.k_strides}, {"value", b.v_strides},
             {"output", b.out_strides}};
  for (const auto& [name, st] : all) {
    if (st.row < s.head_dim || st.batch < 0 || st.head < 0) {
      throw_error(Status::invalid_argument,
                  "{} strides (batch={}, head={}, row={}) let rows of {} elements overlap", name,
                  st.batch, st.head, st.row, s.head_dim);
    }
  }
}

}  // namespace attnjit
