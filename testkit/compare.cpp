#include "testkit/compare.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "attnjit/attnjit.hpp"

namespace attnjit::testkit {
namespace {

// Accumulates the pairs one at a time, in the order of `expected`.
class ErrorAccumulator {
 public:
  void add(double actual, double expected) {
    const std::int64_t index = stats_.count++;
    if (!std::isfinite(expected) || !std::isfinite(actual)) {
      if (actual == expected) return;                          // matching infinities
      if (std::isnan(actual) && std::isnan(expected)) return;  // NaN where the reference has it
      if (stats_.non_finite++ == 0) first_non_finite_ = index;
      return;
    }
    const double error = std::abs(actual - expected);
    if (error > stats_.max_abs_error) {
      stats_.max_abs_error = error;
      worst_finite_ = index;
    }
    squared_error_ += error * error;
    squared_expected_ += expected * expected;
  }

  ErrorStats finish() {
    stats_.worst_index = stats_.non_finite > 0 ? first_non_finite_ : worst_finite_;
    if (squared_expected_ > 0.0) {
      stats_.nmse = squared_error_ / squared_expected_;
    } else {
      stats_.nmse = squared_error_ > 0.0 ? std::numeric_limits<double>::infinity() : 0.0;
    }
    return stats_;
  }

 private:
  ErrorStats stats_;
  std::int64_t first_non_finite_ = -1;
  std::int64_t worst_finite_ = -1;
  double squared_error_ = 0.0;
  double squared_expected_ = 0.0;
};

}  // namespace

Tolerance output_tolerance(attnjit_dtype dtype) {
  switch (dtype) {
    case ATTNJIT_DTYPE_BF16:
      return {3e-2, 1e-4};
    case ATTNJIT_DTYPE_FP16:
      return {1e-2, 1e-5};
    case ATTNJIT_DTYPE_FP32:
      return {1e-4, 1e-8};
  }
  return {0.0, 0.0};
}

Tolerance lse_tolerance() { return {1e-3, 1e-8}; }

std::vector<double> strided_values(const void* actual, attnjit_dtype dtype, const Strides& strides,
                                   int batch, int heads, int len, int head_dim) {
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(batch) * heads * len * head_dim);
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      for (int row = 0; row < len; ++row) {
        const std::int64_t offset = b * strides.batch + h * strides.head + row * strides.row;
        for (int d = 0; d < head_dim; ++d) values.push_back(load_as_float(actual, dtype, offset + d));
      }
    }
  }
  return values;
}

ErrorStats compare_strided(const void* actual, attnjit_dtype dtype, const Strides& strides,
                           int batch, int heads, int len, int head_dim,
                           std::span<const double> expected) {
  const std::size_t count = static_cast<std::size_t>(batch) * heads * len * head_dim;
  if (expected.size() != count) {
    throw c::Error(ATTNJIT_ERROR_INVALID_ARGUMENT,
                   fmt::format("compare: reference has {} values, the [{}, {}, {}, {}] tensor "
                               "has {}",
                               expected.size(), batch, heads, len, head_dim, count));
  }
  return compare_values(strided_values(actual, dtype, strides, batch, heads, len, head_dim),
                        expected);
}

ErrorStats compare_lse(int batch, int heads, int q_len, const float* lse,
                       std::span<const double> expected) {
  const Strides contiguous{static_cast<std::int64_t>(heads) * q_len, q_len, 1};
  return compare_strided(lse, ATTNJIT_DTYPE_FP32, contiguous, batch, heads, q_len, 1, expected);
}

ErrorStats compare_values(std::span<const double> actual, std::span<const double> expected) {
  if (actual.size() != expected.size()) {
    throw c::Error(ATTNJIT_ERROR_INVALID_ARGUMENT,
                   fmt::format("compare: {} values against a reference of {}", actual.size(),
                               expected.size()));
  }
  ErrorAccumulator accumulator;
  for (std::size_t i = 0; i < actual.size(); ++i) accumulator.add(actual[i], expected[i]);
  return accumulator.finish();
}

bool within(const ErrorStats& stats, const Tolerance& tolerance) {
  return stats.non_finite == 0 && stats.max_abs_error <= tolerance.max_abs_error &&
         stats.nmse <= tolerance.nmse;
}

std::string describe(const ErrorStats& stats) {
  return fmt::format("max_abs_error={:.3e} (at {}) nmse={:.3e} non_finite={} of {}",
                     stats.max_abs_error, stats.worst_index, stats.nmse, stats.non_finite,
                     stats.count);
}

}  // namespace attnjit::testkit
