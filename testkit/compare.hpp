// Comparing a computed result (any dtype, any strides) with a double-precision reference (from
// attnjit_variant_reference, or the library's naive reference in internal tests). One error
// measure per result, in the style of ggml's backend tests:
//   max_abs_error  largest |actual - expected| over finite pairs
//   nmse           normalised mean squared error, sum (actual - expected)^2 / sum expected^2
//   non_finite     actual NaN / inf where the reference is finite, or a non-finite value that
//                  does not match the reference's (an lse of -inf matching -inf, or NaN where
//                  the reference is NaN, is simply correct)
// Part of the test kit (testkit/CMakeLists.txt).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attnjit/attnjit.h"
#include "testkit/host_data.hpp"

namespace attnjit::testkit {

struct ErrorStats {
  std::int64_t count = 0;  // values compared
  std::int64_t non_finite = 0;
  double max_abs_error = 0.0;
  std::int64_t worst_index = -1;  // flat index in `expected`: the first non-finite value if
                                  // any, else the largest error; -1 when there is none
  double nmse = 0.0;              // 0 when actual == expected; 1 for an all-zero actual
};

struct Tolerance {
  double max_abs_error;
  double nmse;
};

// Limits for attention outputs computed from inputs of `dtype` and written in it, for inputs
// drawn as host_data.hpp draws them (standard normal or uniform in [-1, 1), scale
// 1/sqrt(head_dim)), so outputs are O(1):
//   bf16: max_abs_error 3e-2, nmse 1e-4  (8-bit mantissa: the output rounding alone is up to
//         2^-9 relative, and kernels round the probabilities to bf16 before the P.V product)
//   fp16: max_abs_error 1e-2, nmse 1e-5  (11-bit mantissa, same two roundings)
//   fp32: max_abs_error 1e-4, nmse 1e-8  (summation order and exp / log approximations only)
Tolerance output_tolerance(attnjit_dtype dtype);

// Limits for the fp32 log-sum-exp. The scores come from the same rounded inputs whatever the
// dtype, so the error is summation order and exp / log approximations: max_abs_error 1e-3,
// nmse 1e-8.
Tolerance lse_tolerance();

// `actual` element (b, h, row, d) is at b*strides.batch + h*strides.head + row*strides.row + d;
// `expected` is [batch, heads, len, head_dim] contiguous. Throws attnjit::c::Error (invalid
// argument) when expected.size() does not match.
ErrorStats compare_strided(const void* actual, attnjit_dtype dtype, const Strides& strides,
                           int batch, int heads, int len, int head_dim,
                           std::span<const double> expected);

// The values of a strided tensor, as compare_strided reads them, in [batch, heads, len, head_dim]
// order (for error_anatomy.hpp).
std::vector<double> strided_values(const void* actual, attnjit_dtype dtype, const Strides& strides,
                                   int batch, int heads, int len, int head_dim);

// An lse buffer ([batch, heads, q_len] contiguous fp32) against a reference's lse.
ErrorStats compare_lse(int batch, int heads, int q_len, const float* lse,
                       std::span<const double> expected);

// Element-wise over two flat ranges of the same size.
ErrorStats compare_values(std::span<const double> actual, std::span<const double> expected);

// No non-finite values and both errors within the limits.
bool within(const ErrorStats& stats, const Tolerance& tolerance);

// "max_abs_error=1.2e-03 (at 517) nmse=3.4e-07 non_finite=0 of 4096", for test and CLI output.
std::string describe(const ErrorStats& stats);

}  // namespace attnjit::testkit
