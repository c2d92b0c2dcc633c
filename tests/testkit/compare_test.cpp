#include "testkit/compare.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "attnjit/attnjit.hpp"
#include "testkit/host_data.hpp"
#include "testkit/internal/compare.hpp"
#include "testkit/internal/random_inputs.hpp"

using namespace attnjit::testkit;

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
    CHECK_THROWS_AS(compare_values(std::vector<double>{1.0}, expected), attnjit::c::Error);
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

TEST_CASE("compare_strided reads any dtype through strides") {
  const attnjit_dtype dtype = GENERATE(ATTNJIT_DTYPE_BF16, ATTNJIT_DTYPE_FP16, ATTNJIT_DTYPE_FP32);
  const attnjit_layout layout = GENERATE(ATTNJIT_LAYOUT_BHLD, ATTNJIT_LAYOUT_BLHD);
  HostTensor tensor(dtype, layout, 2, 3, 5, 8, /*row_padding=*/2);
  tensor.fill_nan();
  tensor.fill_random(42);
  std::vector<double> expected;
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 3; ++h)
      for (int row = 0; row < 5; ++row)
        for (int d = 0; d < 8; ++d) expected.push_back(tensor.at(b, h, row, d));

  const auto compare = [&] {
    return compare_strided(tensor.data(), dtype, tensor.strides(), 2, 3, 5, 8, expected);
  };
  CHECK(compare().max_abs_error == 0.0);
  CHECK(compare().non_finite == 0);

  expected[17] += 1.0;
  const ErrorStats stats = compare();
  CHECK(stats.max_abs_error == 1.0);
  CHECK(stats.worst_index == 17);
}

TEST_CASE("compare_output of the library's types reads the output through its strides") {
  using namespace attnjit;
  reference::HostTensor out(DType::fp16, Layout::blhd, 1, 2, 3, 4, /*row_padding=*/1);
  out.fill_random(3);
  std::vector<double> expected;
  for (int h = 0; h < 2; ++h)
    for (int row = 0; row < 3; ++row)
      for (int d = 0; d < 4; ++d) expected.push_back(out.at(0, h, row, d));
  AttentionBuffers buffers;
  buffers.out = out.data();
  buffers.q_dtype = DType::fp16;
  buffers.out_strides = out.strides();
  const AttentionShape shape{1, 2, 2, 3, 3, 4};
  CHECK(reference::compare_output(shape, buffers, expected).max_abs_error == 0.0);
  expected[5] = 100.0;
  CHECK(reference::compare_output(shape, buffers, expected).worst_index == 5);
  CHECK(reference::output_tolerance(DType::fp16).nmse == output_tolerance(ATTNJIT_DTYPE_FP16).nmse);
}

TEST_CASE("tolerances tighten with the dtype's precision") {
  CHECK(output_tolerance(ATTNJIT_DTYPE_BF16).max_abs_error >
        output_tolerance(ATTNJIT_DTYPE_FP16).max_abs_error);
  CHECK(output_tolerance(ATTNJIT_DTYPE_FP16).max_abs_error >
        output_tolerance(ATTNJIT_DTYPE_FP32).max_abs_error);
  CHECK(output_tolerance(ATTNJIT_DTYPE_BF16).nmse > output_tolerance(ATTNJIT_DTYPE_FP16).nmse);
  CHECK(output_tolerance(ATTNJIT_DTYPE_FP16).nmse > output_tolerance(ATTNJIT_DTYPE_FP32).nmse);
}
