#include "testkit/host_data.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "attnjit/attnjit.hpp"

using namespace attnjit::testkit;

TEST_CASE("fill_random is reproducible, seed-dependent and never zero") {
  const attnjit_dtype dtype = GENERATE(ATTNJIT_DTYPE_BF16, ATTNJIT_DTYPE_FP16, ATTNJIT_DTYPE_FP32);
  const Distribution distribution = GENERATE(Distribution::normal, Distribution::uniform);
  constexpr int kCount = 20000;
  std::vector<float> a(kCount), b(kCount), c(kCount);  // large enough for any dtype
  fill_random(a.data(), dtype, kCount, 5, distribution);
  fill_random(b.data(), dtype, kCount, 5, distribution);
  fill_random(c.data(), dtype, kCount, 6, distribution);
  const std::size_t bytes = kCount * dtype_size(dtype);
  CHECK(std::memcmp(a.data(), b.data(), bytes) == 0);
  CHECK(std::memcmp(a.data(), c.data(), bytes) != 0);

  double sum = 0.0, sum_squares = 0.0;
  int zeros = 0, out_of_range = 0;
  for (int i = 0; i < kCount; ++i) {
    const double value = load_as_float(a.data(), dtype, i);
    if (value == 0.0 || !std::isfinite(value)) ++zeros;
    if (distribution == Distribution::uniform && (value < -1.0 || value > 1.0)) ++out_of_range;
    sum += value;
    sum_squares += value * value;
  }
  CHECK(zeros == 0);
  CHECK(out_of_range == 0);
  const double mean = sum / kCount;
  const double variance = sum_squares / kCount - mean * mean;
  CHECK(std::abs(mean) < 0.03);
  CHECK(variance == Approx(distribution == Distribution::normal ? 1.0 : 1.0 / 3.0).epsilon(0.05));
}

TEST_CASE("fill_nan poisons every element") {
  const attnjit_dtype dtype = GENERATE(ATTNJIT_DTYPE_BF16, ATTNJIT_DTYPE_FP16, ATTNJIT_DTYPE_FP32);
  std::vector<float> data(64, 1.0f);
  fill_nan(data.data(), dtype, 64);
  for (int i = 0; i < 64; ++i) CHECK(std::isnan(load_as_float(data.data(), dtype, i)));
}

TEST_CASE("host tensors have the layout's strides, with optional row padding") {
  SECTION("contiguous strides are the layout's") {
    HostTensor bhld(ATTNJIT_DTYPE_BF16, ATTNJIT_LAYOUT_BHLD, 2, 3, 5, 8);
    CHECK(bhld.strides().batch == 3 * 5 * 8);
    CHECK(bhld.strides().head == 5 * 8);
    CHECK(bhld.strides().row == 8);
    HostTensor tensor(ATTNJIT_DTYPE_BF16, ATTNJIT_LAYOUT_BLHD, 2, 3, 5, 8);
    CHECK(tensor.strides().batch == 5 * 3 * 8);
    CHECK(tensor.strides().head == 8);
    CHECK(tensor.strides().row == 3 * 8);
    CHECK(tensor.storage_elements() == 2 * 3 * 5 * 8);
    CHECK(tensor.storage_bytes() == 2 * 3 * 5 * 8 * 2);
  }
  SECTION("padding leaves a gap after every row, which fill_random does not touch") {
    HostTensor tensor(ATTNJIT_DTYPE_FP32, ATTNJIT_LAYOUT_BLHD, 1, 2, 3, 4, /*row_padding=*/2);
    CHECK(tensor.strides().head == 6);
    CHECK(tensor.strides().row == 12);
    CHECK(tensor.storage_elements() == 36);
    tensor.fill_nan();
    tensor.fill_random(1);
    int nans = 0;
    for (std::int64_t i = 0; i < tensor.storage_elements(); ++i) {
      if (std::isnan(load_as_float(tensor.data(), ATTNJIT_DTYPE_FP32, i))) ++nans;
    }
    CHECK(nans == 36 - 24);
  }
}

TEST_CASE("host tensors too large to address are refused before any arithmetic overflows") {
  // 2^31-1 rows of 8 heads overflow a 32-bit product; all four at INT_MAX overflow 64 bits.
  const int big = std::numeric_limits<int>::max();
  try {
    HostTensor tensor(ATTNJIT_DTYPE_BF16, ATTNJIT_LAYOUT_BHLD, big, big, big, big);
    FAIL("expected an error");
  } catch (const attnjit::c::Error& e) {
    CHECK(e.status() == ATTNJIT_ERROR_OUT_OF_MEMORY);
    CHECK_THAT(e.what(), Catch::Contains("too large"));
  }
  CHECK(padded_strides(ATTNJIT_LAYOUT_BHLD, 8, big, 64, 0).batch == std::int64_t{8} * big * 64);
}
