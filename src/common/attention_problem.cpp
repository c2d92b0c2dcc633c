#include "common/attention_problem.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>

#include "common/error.hpp"

namespace attnjit {
namespace {

// Note: sizes and strides come from callers (the C API passes them through unchecked), so every
// product and sum over them is checked; a wrapped offset would address memory outside the buffer.
bool mul_overflows(std::int64_t a, std::int64_t b, std::int64_t& result) {
  return __builtin_mul_overflow(a, b, &result);
}

bool add_overflows(std::int64_t a, std::int64_t b, std::int64_t& result) {
  return __builtin_add_overflow(a, b, &result);
}

// One dimension of a [batch, heads, len, head_dim] view: `extent` indices `stride` elements apart.
struct Dimension {
  std::int64_t extent;
  std::int64_t stride;
};

std::array<Dimension, 4> dimensions(const Strides& strides, int batch, int heads, int len,
                                    int head_dim) {
  return {{{batch, strides.batch}, {heads, strides.head}, {len, strides.row}, {head_dim, 1}}};
}

// Bytes from the first element of the view to one past its last, or nothing when that does not
// fit in 63 bits. Strides are non-negative here.
std::optional<std::int64_t> extent_bytes(const std::array<Dimension, 4>& dims,
                                         std::size_t element_size) {
  std::int64_t last = 0;
  for (const Dimension& dim : dims) {
    std::int64_t step = 0;
    if (mul_overflows(dim.extent - 1, dim.stride, step) || add_overflows(last, step, last)) {
      return std::nullopt;
    }
  }
  std::int64_t bytes = 0;
  if (add_overflows(last, 1, last) ||
      mul_overflows(last, static_cast<std::int64_t>(element_size), bytes)) {
    return std::nullopt;
  }
  return bytes;
}

// Throws unless every element of the view has an offset (in bytes, from `data`) that neither
// overflows nor wraps around the address space.
void check_addressable(const char* name, const void* data, const std::array<Dimension, 4>& dims,
                       std::size_t element_size) {
  const auto bytes = extent_bytes(dims, element_size);
  const auto address = reinterpret_cast<std::uintptr_t>(data);
  if (!bytes || static_cast<std::uint64_t>(*bytes) > UINTPTR_MAX - address) {
    throw_error(Status::invalid_argument,
                "{} [{}, {}, {}, {}] with strides ({}, {}, {}, {}) reaches past the end of the "
                "address space",
                name, dims[0].extent, dims[1].extent, dims[2].extent, dims[3].extent,
                dims[0].stride, dims[1].stride, dims[2].stride, dims[3].stride);
  }
}

// True when two elements of the view can share memory. Note: sufficient, not necessary: ordered
// by stride, each dimension must step past everything the smaller ones reach. That is every
// layout a tensor library produces (any permutation of dimensions, any padding); exotic
// interleavings that happen not to collide are refused too. Needs extent_bytes to succeed.
bool view_overlaps(std::array<Dimension, 4> dims) {
  std::sort(dims.begin(), dims.end(),
            [](const Dimension& a, const Dimension& b) { return a.stride < b.stride; });
  std::int64_t reach = 1;  // elements spanned by the dimensions so far
  for (const Dimension& dim : dims) {
    if (dim.extent == 1) continue;  // its stride is never used
    if (dim.stride < reach) return true;
    reach += (dim.extent - 1) * dim.stride;
  }
  return false;
}

}  // namespace

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
  std::int64_t rows_d = 0, heads_d = 0, batch = 0;
  if (mul_overflows(rows, d, rows_d) || mul_overflows(heads, d, heads_d) ||
      mul_overflows(heads, rows_d, batch)) {
    throw_error(Status::invalid_argument,
                "a tensor of {} heads x {} rows x {} elements is too large to address", num_heads,
                len, head_dim);
  }
  if (layout == Layout::bhld) return {batch, rows_d, d};
  return {batch, d, heads_d};
}

std::array<TensorView, 4> tensor_views(const AttentionShape& s, const AttentionBuffers& b) {
  // Note: a paged call's keys and values are its pools, whatever its batch and kv_len.
  // Packed sequences are one batch entry of their total rows.
  const bool paged = is_paged(b);
  int kv_batch = paged ? b.kv_pages.num_pages : s.batch;
  int kv_rows = paged ? b.kv_pages.page_size : s.kv_len;
  if (packs_keys(b)) {
    kv_batch = 1;
    kv_rows = b.sequences.kv_total;
  }
  const int q_batch = packs_queries(b) ? 1 : s.batch;
  const int q_rows = packs_queries(b) ? b.sequences.q_total : s.q_len;
  return {{{"query", b.q, b.q_strides, s.num_heads_q, q_rows, q_batch},
           {"key", b.k, b.k_strides, s.num_heads_kv, kv_rows, kv_batch},
           {"value", b.v, b.v_strides, s.num_heads_kv, kv_rows, kv_batch},
           {"output", b.out, b.out_strides, s.num_heads_q, q_rows, q_batch}}};
}

std::optional<std::int64_t> view_extent_bytes(const TensorView& view, const AttentionShape& shape,
                                              std::size_t element_size) {
  return extent_bytes(dimensions(view.strides, view.batch, view.heads, view.len, shape.head_dim),
                      element_size);
}

std::optional<std::int64_t> kv_row_offset(const AttentionBuffers& buffers, const Strides& strides,
                                          int b, int h, int row) {
  const std::int64_t head = h * strides.head;
  if (packs_keys(buffers)) return head + row * strides.row;
  if (!is_paged(buffers)) return b * strides.batch + head + row * strides.row;
  const KvPages& pages = buffers.kv_pages;
  const std::int32_t page =
      pages.table[static_cast<std::int64_t>(b) * pages.table_width + row / pages.page_size];
  if (page < 0 || page >= pages.num_pages) return std::nullopt;
  return page * strides.batch + head + (row % pages.page_size) * strides.row;
}

float effective_scale(const AttentionShape& shape, const AttentionBuffers& buffers) {
  if (buffers.scale != 0.0f) return buffers.scale;
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape.head_dim)));
}

namespace {

void validate_pages(const AttentionShape& s, const KvPages& pages) {
  const int size = pages.page_size;
  if (size <= 0) {
    throw_error(Status::invalid_argument,
                "kv_page_size must be positive (the rows in a page of the pools); got {}", size);
  }
  if (pages.num_pages <= 0) {
    throw_error(Status::invalid_argument,
                "kv_num_pages must be positive (the pages in the key and value pools); got {}",
                pages.num_pages);
  }
  const std::int64_t needed = (std::int64_t{s.kv_len} + size - 1) / size;
  if (pages.table_width < needed) {
    throw_error(Status::invalid_argument,
                "kv_page_table_width ({}) is too narrow: kv_len {} in pages of {} rows needs {} "
                "entries per sequence",
                pages.table_width, s.kv_len, size, needed);
  }
  if (std::int64_t{s.batch} * pages.table_width > std::numeric_limits<std::int32_t>::max()) {
    throw_error(Status::invalid_argument,
                "the page table of {} sequences x {} entries is too large (at most 2^31 - 1 "
                "entries)",
                s.batch, pages.table_width);
  }
}

void validate_sequences(const AttentionShape& s, const AttentionBuffers& b) {
  const SequenceTables& t = b.sequences;
  if (has_sequence_tables(b) && !is_paged(b) && std::max(s.kv_len, t.kv_total) >= kDensePageRows) {
    throw_error(Status::invalid_argument,
                "variable-length sequences over dense keys take fewer than 2^30 key rows; got "
                "kv_len {} and kv_total {}",
                s.kv_len, t.kv_total);
  }
  if (t.q_starts != nullptr && t.q_total <= 0) {
    throw_error(Status::invalid_argument,
                "q_total must be positive with q_seq_starts (the rows of the packed query and "
                "output tensors); got {}",
                t.q_total);
  }
  if (t.kv_starts != nullptr && t.kv_total <= 0) {
    throw_error(Status::invalid_argument,
                "kv_total must be positive with kv_seq_starts (the rows of the packed key and "
                "value tensors); got {}",
                t.kv_total);
  }
  if (t.kv_starts != nullptr && t.kv_lens != nullptr) {
    throw_error(Status::invalid_argument,
                "kv_seq_starts and kv_seq_lens both given: packed keys have their counts in their "
                "starts; pass one of them");
  }
  if (t.kv_starts != nullptr && is_paged(b)) {
    throw_error(Status::invalid_argument,
                "kv_seq_starts with a page table: a paged cache's sequences are its table's rows; "
                "give their key counts as kv_seq_lens");
  }
}

}  // namespace

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
  if (is_paged(b)) validate_pages(s, b.kv_pages);
  validate_sequences(s, b);
  const std::size_t element_size = dtype_size(b.q_dtype);
  for (const TensorView& view : tensor_views(s, b)) {
    const Strides& st = view.strides;
    if (st.row < s.head_dim || st.batch < 0 || st.head < 0) {
      throw_error(Status::invalid_argument,
                  "{} strides (batch={}, head={}, row={}) let rows of {} elements overlap",
                  view.name, st.batch, st.head, st.row, s.head_dim);
    }
    check_addressable(view.name, view.data,
                      dimensions(st, view.batch, view.heads, view.len, s.head_dim), element_size);
  }
  // Note: inputs may share memory between heads or batches (reads only); output elements may not,
  // or two threads would write one element and the result would depend on their order.
  const TensorView out = tensor_views(s, b)[3];
  if (view_overlaps(dimensions(b.out_strides, out.batch, out.heads, out.len, s.head_dim))) {
    throw_error(Status::invalid_argument,
                "output strides (batch={}, head={}, row={}) make elements of [batch={}, "
                "heads={}, len={}, head_dim={}] overlap; every output element needs its own memory",
                b.out_strides.batch, b.out_strides.head, b.out_strides.row, out.batch, out.heads,
                out.len, s.head_dim);
  }
  if (b.lse != nullptr) {
    // [batch, num_heads_q, q_len], or [num_heads_q, q_total] with packed queries.
    const Strides lse_strides{std::int64_t{out.heads} * out.len, out.len, 1};
    check_addressable("lse", b.lse, dimensions(lse_strides, out.batch, out.heads, out.len, 1),
                      sizeof(float));
  }
}

}  // namespace attnjit
