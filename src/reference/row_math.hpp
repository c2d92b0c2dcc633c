// Row kernels of the CPU reference: dtype conversion of one head-dim row and the fp32 inner
// products. Internal to src/reference.
#pragma once

#include <cstdint>

#include "common/attention_problem.hpp"
#include "common/half.hpp"

namespace attnjit::reference {

// dst[d] = element (offset + d) of `base`, widened to float.
inline void load_row(const void* base, DType dtype, std::int64_t offset, int n, float* dst) {
  switch (dtype) {
    case DType::bf16: {
      const auto* src = static_cast<const std::uint16_t*>(base) + offset;
      for (int d = 0; d < n; ++d) dst[d] = bf16_bits_to_float(src[d]);
      return;
    }
    case DType::fp16: {
      const auto* src = static_cast<const std::uint16_t*>(base) + offset;
      for (int d = 0; d < n; ++d) dst[d] = fp16_bits_to_float(src[d]);
      return;
    }
    case DType::fp32: {
      const auto* src = static_cast<const float*>(base) + offset;
      for (int d = 0; d < n; ++d) dst[d] = src[d];
      return;
    }
  }
}

// dst[d] = element d of row `row` of sequence b, key/value head h of a key or value tensor
// (`base`, `strides`) of the call of `buffers`: through its page table for a paged call
// (kv_row_offset), zeros for a row of a page outside the pool.
inline void load_kv_row(const AttentionBuffers& buffers, const void* base, DType dtype,
                        const Strides& strides, int b, int h, int row, int n, float* dst) {
  if (const auto offset = kv_row_offset(buffers, strides, b, h, row)) {
    load_row(base, dtype, *offset, n, dst);
  } else {
    for (int d = 0; d < n; ++d) dst[d] = 0.0f;
  }
}

// Element (offset + d) of `base` = src[d], rounded to nearest even.
inline void store_row(void* base, DType dtype, std::int64_t offset, int n, const float* src) {
  switch (dtype) {
    case DType::bf16: {
      auto* dst = static_cast<std::uint16_t*>(base) + offset;
      for (int d = 0; d < n; ++d) dst[d] = float_to_bf16_bits(src[d]);
      return;
    }
    case DType::fp16: {
      auto* dst = static_cast<std::uint16_t*>(base) + offset;
      for (int d = 0; d < n; ++d) dst[d] = float_to_fp16_bits(src[d]);
      return;
    }
    case DType::fp32: {
      auto* dst = static_cast<float*>(base) + offset;
      for (int d = 0; d < n; ++d) dst[d] = src[d];
      return;
    }
  }
}

// scores[c] = dot(q, column c of k_transposed) for c < cols, in fp32, summing over d in order:
// the same bits on every run, and the inner loop over c vectorises without reassociation.
// k_transposed is [head_dim, ld].
inline void dot_rows_fp32(const float* __restrict q, const float* __restrict k_transposed, int ld,
                          int head_dim, int cols, float* __restrict scores) {
  for (int c = 0; c < cols; ++c) scores[c] = 0.0f;
  for (int d = 0; d < head_dim; ++d) {
    const float q_d = q[d];
    const float* k_row = k_transposed + static_cast<std::size_t>(d) * ld;
    for (int c = 0; c < cols; ++c) scores[c] += q_d * k_row[c];
  }
}

// The larger of a and b, or NaN when either is NaN. Note: std::max and fmax drop a NaN, which
// would turn a row whose scores are NaN into one that looks fully masked.
template <typename T>
inline T max_keeping_nan(T a, T b) {
  return (a != a || a > b) ? a : b;
}

// y += alpha * x
inline void axpy_fp32(float alpha, const float* __restrict x, float* __restrict y, int n) {
  for (int d = 0; d < n; ++d) y[d] += alpha * x[d];
}

}  // namespace attnjit::reference
