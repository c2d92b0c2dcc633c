#include "testkit/internal/compare.hpp"

#include "testkit/internal/random_inputs.hpp"

namespace attnjit::reference {

Tolerance output_tolerance(DType dtype) { return testkit::output_tolerance(c_dtype(dtype)); }

ErrorStats compare_strided(const void* actual, DType dtype, const Strides& strides, int batch,
                           int heads, int len, int head_dim, std::span<const double> expected) {
  return testkit::compare_strided(actual, c_dtype(dtype),
                                  {strides.batch, strides.head, strides.row}, batch, heads, len,
                                  head_dim, expected);
}

ErrorStats compare_output(const AttentionShape& shape, const AttentionBuffers& buffers,
                          std::span<const double> expected) {
  return compare_strided(buffers.out, buffers.q_dtype, buffers.out_strides, shape.batch,
                         shape.num_heads_q, shape.q_len, shape.head_dim, expected);
}

std::vector<double> output_values(const AttentionShape& shape, const AttentionBuffers& buffers) {
  const Strides& strides = buffers.out_strides;
  return testkit::strided_values(buffers.out, c_dtype(buffers.q_dtype),
                                 {strides.batch, strides.head, strides.row}, shape.batch,
                                 shape.num_heads_q, shape.q_len, shape.head_dim);
}

ErrorStats compare_lse(const AttentionShape& shape, const float* lse,
                       std::span<const double> expected) {
  return testkit::compare_lse(shape.batch, shape.num_heads_q, shape.q_len, lse, expected);
}

}  // namespace attnjit::reference
