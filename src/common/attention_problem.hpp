// Host-side description of one attention call: shapes, element types, buffers and strides.
// Shared by the CPU reference, the CUDA dispatcher and the C API boundary.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "attnjit/sequences.cuh"

namespace attnjit {

enum class DType { bf16, fp16, fp32 };
enum class Layout { bhld, blhd };  // [batch, heads, len, dim] or [batch, len, heads, dim]

std::string_view dtype_name(DType dtype);        // "bfloat16", "float16", "float32"
std::string_view dtype_short_name(DType dtype);  // "bf16", "fp16", "fp32"
std::size_t dtype_size(DType dtype);

struct AttentionShape {
  int batch = 1;
  int num_heads_q = 1;
  int num_heads_kv = 1;  // num_heads_q % num_heads_kv == 0
  int q_len = 0;
  int kv_len = 0;
  int head_dim = 0;
};

// Strides in elements; the head-dim stride is always 1.
struct Strides {
  std::int64_t batch = 0;
  std::int64_t head = 0;
  std::int64_t row = 0;
};

// Contiguous strides of a [B, H, L, D] or [B, L, H, D] tensor. Throws Error(invalid_argument)
// when they do not fit in 64 bits.
Strides layout_strides(Layout layout, int num_heads, int len, int head_dim);

// A paged key/value cache (vLLM, FlashInfer, SGLang): K and V are pools of pages of page_size
// rows each, indexed like a batch (their strides' batch stride is the page stride: [num_pages,
// heads, page_size, head_dim] in the bhld layout, [num_pages, page_size, heads, head_dim] in
// blhd), and row j of sequence b is row j % page_size of page table[b * table_width + j /
// page_size]. A page index outside [0, num_pages) reads as zeros: the table's unused slots
// (-1, or anything) past a sequence's end are never read through, whatever they hold.
struct KvPages {
  const std::int32_t* table = nullptr;  // null: K and V are dense; memory of the backend's kind
  int table_width = 0;                  // pages per sequence in the table (its row stride)
  int page_size = 0;                    // rows per page: any positive count
  int num_pages = 0;                    // pages in each pool
};

struct AttentionBuffers {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;    // dtype of q
  float* lse = nullptr;   // optional, [batch, num_heads_q, q_len] contiguous
  DType q_dtype = DType::bf16;
  DType k_dtype = DType::bf16;
  DType v_dtype = DType::bf16;
  Strides q_strides, k_strides, v_strides, out_strides;
  float scale = 0.0f;  // 0 means 1/sqrt(head_dim)
  KvPages kv_pages;    // table null: k and v are [batch, heads, kv_len, head_dim] views
  // Variable-length sequences (attnjit/sequences.cuh; tables in memory of the backend's kind). With
  // q_starts, q and out are [1, heads, q_total, head_dim] views of packed rows (their batch
  // strides unused), q_len is the longest sequence's query count and lse is
  // [num_heads_q, q_total]; with kv_starts (dense only) the same for k and v; kv_lens gives each
  // sequence's key count in a padded or paged cache. The mask and score see each sequence's own
  // q_len and kv_len.
  SequenceTables sequences{};
};

// Whether a call reads its keys and values through a page table.
inline bool is_paged(const AttentionBuffers& buffers) { return buffers.kv_pages.table != nullptr; }

// Whether a call's sequences have extents of their own (any sequence table), and whether its
// queries or its keys are packed.
inline bool has_sequence_tables(const AttentionBuffers& buffers) {
  const SequenceTables& t = buffers.sequences;
  return t.q_starts != nullptr || t.kv_starts != nullptr || t.kv_lens != nullptr;
}
inline bool packs_queries(const AttentionBuffers& buffers) {
  return buffers.sequences.q_starts != nullptr;
}
inline bool packs_keys(const AttentionBuffers& buffers) {
  return buffers.sequences.kv_starts != nullptr;
}

// One of the four [batch, heads, len, head_dim] tensors of a call, for the checks that go over
// each of them.
struct TensorView {
  const char* name;  // "query", "key", "value", "output"
  const void* data;
  Strides strides;
  int heads;
  int len;
  int batch;  // the call's batch, the pool's pages for the keys and values of a paged call, or 1
              // for packed sequences (whose len is then their total rows)
};

// query, key, value, output.
std::array<TensorView, 4> tensor_views(const AttentionShape& shape,
                                       const AttentionBuffers& buffers);

// Bytes from the view's first element to one past its last, or nullopt when that does not fit in
// 63 bits. Note: after validate_problem, it fits for every view of the call.
std::optional<std::int64_t> view_extent_bytes(const TensorView& view, const AttentionShape& shape,
                                              std::size_t element_size);

// The element offset of row `row` of sequence `b`, key/value head `h`, in a tensor of `strides`
// (the pool's, for a paged call: table[b * table_width + row / page_size]'s row row % page_size),
// or nullopt where that page is outside the pool (the row reads as zeros). `table` is read: host
// memory only (the CPU backend's). With packed keys (kv_starts) `row` is the packed row.
std::optional<std::int64_t> kv_row_offset(const AttentionBuffers& buffers, const Strides& strides,
                                          int b, int h, int row);

// The softmax scale applied: buffers.scale, or 1/sqrt(head_dim) (rounded once from double) when
// it is 0. Note: the CPU reference and the CUDA launcher both call this, so they apply
// bit-identical scales.
float effective_scale(const AttentionShape& shape, const AttentionBuffers& buffers);

// Throws Error(invalid_argument) naming the first problem: non-positive sizes, GQA ratio,
// null buffers, negative strides or rows that overlap, a view whose last element's offset
// overflows 64 bits or wraps the address space, output elements that share memory (e.g. a head
// stride of 0), an lse too large to address, and for a paged call a page size that is not a power
// of two, a table too narrow for kv_len or too large to address, an empty pool; sequence tables
// with a non-positive total, packed keys with a page table or with per-sequence key counts. The
// tables' and the page table's contents are not read (device memory on the CUDA backend): the
// kernels clamp them (sequence_extent). Nothing is read or written before these checks.
void validate_problem(const AttentionShape& shape, const AttentionBuffers& buffers);

}  // namespace attnjit
