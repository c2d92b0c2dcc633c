#include "reference/compare.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "common/error.hpp"
#include "reference/random_inputs.hpp"

using namespace attnjit;
using namespace attnjit::reference;

TEST_CASE("compare_values measures max abs error, nmse and non-finite values") {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> expected{1.0, -2.0, 0.5, -inf};

  SECTION("identical values") {
    const ErrorStats stats = compare_values(expected, expected);
    CHECK(stats.count == 4);
    CHECK(stats.max_abs_error == 0.0);
    CHECK(stats.nmse == 0.0);
    CHECK(stats.non_finite == 0);  // -inf matching -inf is correct
    CHECK(within(stats, {0.0, 0.0}));
  }
  SECTION("one value off") {
    const std::vector<double> actual{1.0, -2.5, 0.5, -inf};
    const ErrorStats stats = compare_values(actual, expected);
    CHECK(stats.max_abs_error == 0.5);
    CHECK(stats.worst_index == 1);
    CHECK(stats.nmse == Approx(0.25 / 5.25));
    CHECK(within(stats, {0.5, 0.05}));
    CHECK_FALSE(within(stats, {0.4, 1.0}));
    CHECK_FALSE(within(stats, {1.0, 0.01}));
  }
  SECTION("NaN and mismatched infinities count as non-finite") {
    const std::vector<double> actual{std::nan(""), -2.0, inf, 3.0};
    const ErrorStats stats = compare_values(actual, expected);
    CHECK(stats.non_finite == 3);
    CHECK(stats.worst_index == 0);
    CHECK_FALSE(within(stats, {inf, inf}));
  }
  SECTION("size mismatch") {
    CHECK_THROWS_AS(compare_values(std::vector<double>{1.0}, expected), Error);
  }
}

TEST_CASE("compare_values takes NaN where the reference has NaN as correct, and only there") {
  const double nan = std::nan("");
  const std::vector<double> expected{1.0, nan, nan};
  CHECK(within(compare_values(std::vector<double>{1.0, nan, nan}, expected), {0.0, 0.0}));
  const ErrorStats finite_for_nan = compare_values(std::vector<double>{1.0, 0.0, nan}, expected);
  CHECK(finite_for_nan.non_finite == 1);
  CHECK(finite_for_nan.worst_index == 1);
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(compare_values(std::vector<double>{1.0, -inf, nan}, expected).non_finite == 1);
}

TEST_CASE("compare_output reads any dtype through strides") {
  const DType dtype = GENERATE(DType::bf16, DType::fp16, DType::fp32);
  const Layout layout = GENERATE(Layout::bhld, Layout::blhd);
  HostTensor tensor(dtype, layout, 2, 3, 5, 8, /*row_padding=*/2);
  tensor.fill_nan();
  tensor.fill_random(42);
  std::vector<double> expected;
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 3; ++h)
      for (int row = 0; row < 5; ++row)
        for (int d = 0; d < 8; ++d) expected.push_back(tensor.at(b, h, row, d));

  AttentionShape shape{2, 3, 3, 5, 5, 8};
  AttentionBuffers buffers;
  buffers.out = tensor.data();
  buffers.q_dtype = dtype;
  buffers.out_strides = tensor.strides();
  CHECK(compare_output(shape, buffers, expected).max_abs_error == 0.0);
  CHECK(compare_output(shape, buffers, expected).non_finite == 0);

  expected[17] += 1.0;
  const ErrorStats stats = compare_output(shape, buffers, expected);
  CHECK(stats.max_abs_error == 1.0);
  CHECK(stats.worst_index == 17);
}

TEST_CASE("tolerances tighten with the dtype's precision") {
  CHECK(output_tolerance(DType::bf16).max_abs_error > output_tolerance(DType::fp16).max_abs_error);
  CHECK(output_tolerance(DType::fp16).max_abs_error > output_tolerance(DType::fp32).max_abs_error);
  CHECK(output_tolerance(DType::bf16).nmse > output_tolerance(DType::fp16).nmse);
  CHECK(output_tolerance(DType::fp16).nmse > output_tolerance(DType::fp32).nmse);
}
