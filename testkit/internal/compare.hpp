// The test kit's comparisons (testkit/compare.hpp) for results held in the library's own types,
// against the naive reference (reference/naive.hpp), for internal tests.
#pragma once

#include <span>
#include <vector>

#include "common/attention_problem.hpp"
#include "testkit/compare.hpp"

namespace attnjit::reference {

using testkit::compare_values;
using testkit::describe;
using testkit::ErrorStats;
using testkit::lse_tolerance;
using testkit::Tolerance;
using testkit::within;

Tolerance output_tolerance(DType dtype);

ErrorStats compare_strided(const void* actual, DType dtype, const Strides& strides, int batch,
                           int heads, int len, int head_dim, std::span<const double> expected);

// An attention output (dtype of q, buffers.out_strides) against naive_attention's `out`.
ErrorStats compare_output(const AttentionShape& shape, const AttentionBuffers& buffers,
                          std::span<const double> expected);

// An attention output's values in [batch, num_heads_q, q_len, head_dim] order, as
// compare_output reads them.
std::vector<double> output_values(const AttentionShape& shape, const AttentionBuffers& buffers);

// An lse buffer ([batch, num_heads_q, q_len] contiguous) against naive_attention's `lse`.
ErrorStats compare_lse(const AttentionShape& shape, const float* lse,
                       std::span<const double> expected);

}  // namespace attnjit::reference
