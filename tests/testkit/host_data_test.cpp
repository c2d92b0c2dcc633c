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

// The fill's values as the sequential splitmix64 stream gives them (Box-Muller from two draws a
// value), whatever the fill's size and however it is cut into parallel chunks: a large fill's
// values equal a small one's where they overlap, and a host tensor's logical elements (padding
// skipped, in any layout) are the flat fill's.
TEST_CASE("fill_random's values do not depend on the fill's size or its parallel chunks") {
  // The first normal value of seed 7, by hand: draws 1 and 2 of splitmix64 from state 7.
  const auto splitmix = [](std::uint64_t state) {
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  const auto unit = [](std::uint64_t bits) {
    return (static_cast<double>(bits >> 11) + 0.5) * 0x1p-53;
  };
  const double u1 = unit(splitmix(7 + 0x9E3779B97F4A7C15ull));
  const double u2 = unit(splitmix(7 + 2 * 0x9E3779B97F4A7C15ull));
  const float first = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                                         std::cos(2.0 * 3.14159265358979323846 * u2));
  std::vector<float> small(1000), large(3 << 20);  // 3M values: parallel chunks
  fill_random(small.data(), ATTNJIT_DTYPE_FP32, 1000, 7);
  fill_random(large.data(), ATTNJIT_DTYPE_FP32, static_cast<std::int64_t>(large.size()), 7);
  CHECK(small[0] == first);
  CHECK(std::memcmp(small.data(), large.data(), small.size() * sizeof(float)) == 0);
  // A tensor of 3M logical values in BLHD with padding: its element (b, h, row, d) is value
  // ((b * heads + h) * len + row) * head_dim + d of the flat fill.
  HostTensor tensor(ATTNJIT_DTYPE_FP32, ATTNJIT_LAYOUT_BLHD, 3, 4, 4096, 64, /*row_padding=*/3);
  tensor.fill_random(7);
  int mismatches = 0;
  for (int b = 0; b < 3; ++b) {
    for (int h = 0; h < 4; ++h) {
      for (int row = 0; row < 4096; row += 61) {
        for (int d = 0; d < 64; ++d) {
          const std::size_t i = ((static_cast<std::size_t>(b) * 4 + h) * 4096 + row) * 64 + d;
          if (tensor.at(b, h, row, d) != large[i]) ++mismatches;
        }
      }
    }
  }
  CHECK(mismatches == 0);
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
