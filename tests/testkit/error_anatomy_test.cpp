// The error anatomy (testkit/error_anatomy.hpp) on outputs corrupted the ways a wrong kernel
// encoding corrupts them: each finding appears for its corruption.
#include "testkit/error_anatomy.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using attnjit::testkit::AnatomyInput;
using attnjit::testkit::describe_error_anatomy;

namespace {

constexpr int kBatch = 1, kHeads = 2, kLen = 256, kHeadDim = 128;

std::vector<double> random_values(std::size_t count, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<double> normal;
  std::vector<double> values(count);
  for (double& v : values) v = normal(generator);
  return values;
}

// The anatomy of `expected` against a copy that `corrupt(row, d, actual)` changed, row counting
// over (head, row); the lse matches unless `lse_off` is set.
struct Corrupted {
  std::vector<double> expected = random_values(std::size_t{kBatch} * kHeads * kLen * kHeadDim, 7);
  std::vector<double> actual = expected;
  std::vector<double> expected_lse = random_values(std::size_t{kBatch} * kHeads * kLen, 8);
  std::vector<double> actual_lse = expected_lse;

  double& at(std::vector<double>& v, int row, int d) {
    return v[static_cast<std::size_t>(row) * kHeadDim + d];
  }
  void each(const std::function<void(int, int)>& change) {
    for (int row = 0; row < kBatch * kHeads * kLen; ++row) {
      for (int d = 0; d < kHeadDim; ++d) change(row, d);
    }
  }
  std::string anatomy() const {
    return describe_error_anatomy({.batch = kBatch,
                                   .heads = kHeads,
                                   .len = kLen,
                                   .head_dim = kHeadDim,
                                   .actual = actual,
                                   .expected = expected,
                                   .actual_lse = actual_lse,
                                   .expected_lse = expected_lse,
                                   .tolerance = 3e-2});
  }
};

}  // namespace

TEST_CASE("a correct output has no wrong elements and a matching lse", "[testkit][anatomy]") {
  const std::string text = Corrupted{}.anatomy();
  CHECK_THAT(text, Catch::Contains("no wrong elements") && Catch::Contains("lse matches"));
}

TEST_CASE("swapped 16-byte chunks are found as columns holding others, with their XOR rule",
          "[testkit][anatomy]") {
  Corrupted c;
  c.each([&](int row, int d) { c.at(c.actual, row, d) = c.at(c.expected, row, d ^ 8); });
  const std::string text = c.anatomy();
  INFO(text);
  CHECK_THAT(text, Catch::Contains("columns holding other reference columns (128 of the 128"));
  CHECK_THAT(text, Catch::Contains("0..7 <- 8..15, 8..15 <- 0..7"));
  CHECK_THAT(text, Catch::Contains("(every one is index ^ 8)"));
  CHECK_THAT(text, Catch::Contains("suspect V's load or layout"));
}

TEST_CASE("rows of the accumulators' upper half are confined to 8-15", "[testkit][anatomy]") {
  Corrupted c;
  c.each([&](int row, int d) {
    if (row % kLen % 16 >= 8) c.at(c.actual, row, d) += 1.0;
  });
  const std::string text = c.anatomy();
  INFO(text);
  CHECK_THAT(text, Catch::Contains("rows by row % 16 (the accumulators' two 8-row halves): 0-7 0%, "
                                   "8-15 100% (wrong only in 8-15)"));
  CHECK_THAT(text, Catch::Contains("50.0%"));
}

TEST_CASE("a wrong second consumer warpgroup is confined to rows 64-127 of each tile",
          "[testkit][anatomy]") {
  Corrupted c;
  c.each([&](int row, int d) {
    if (row % kLen % 128 >= 64) c.at(c.actual, row, d) -= 1.0;
  });
  const std::string text = c.anatomy();
  INFO(text);
  CHECK_THAT(text, Catch::Contains("0-63 0%, 64-127 100% (wrong only in 64-127)"));
}

TEST_CASE("a wrong lse points at the first GEMM, a right one at the second",
          "[testkit][anatomy]") {
  Corrupted c;
  c.each([&](int row, int d) {
    if (d == 5) c.at(c.actual, row, d) += 1.0;
  });
  CHECK_THAT(c.anatomy(), Catch::Contains("lse matches") &&
                              Catch::Contains("(wrong only in 4-5)") &&
                              Catch::Contains("(wrong only in c0)"));
  c.actual_lse[3] += 0.5;
  c.actual_lse[4] = std::numeric_limits<double>::quiet_NaN();
  CHECK_THAT(c.anatomy(), Catch::Contains("lse wrong in 2 of 512 rows: suspect Q or K"));
}

TEST_CASE("rows swapped within their tile are found with their XOR rule", "[testkit][anatomy]") {
  Corrupted c;
  c.each([&](int row, int d) { c.at(c.actual, row, d) = c.at(c.expected, row ^ 8, d); });
  const std::string text = c.anatomy();
  INFO(text);
  CHECK_THAT(text, Catch::Contains("rows holding other reference rows of their tile (64 of the "
                                   "first 64 mostly wrong rows"));
  CHECK_THAT(text, Catch::Contains("(every one is index ^ 8)"));
}

TEST_CASE("zeroed rows and NaN where the reference is finite are counted", "[testkit][anatomy]") {
  Corrupted c;
  c.each([&](int row, int d) {
    if (row == 3 || row == 300) c.at(c.actual, row, d) = 0.0;
    if (row == 10 && d == 1) c.at(c.actual, row, d) = std::nan("");
  });
  const std::string text = c.anatomy();
  INFO(text);
  CHECK_THAT(text, Catch::Contains("2 rows are all zero where the reference's are not"));
  CHECK_THAT(text, Catch::Contains("1 of them NaN or inf where the reference is finite"));
  CHECK_THAT(text, Catch::Contains("(batch, head): (0,0)") && Catch::Contains("%, (0,1)"));
}
