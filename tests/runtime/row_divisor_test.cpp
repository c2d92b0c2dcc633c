// The page divisor of paged calls (row_divisor.cuh): a multiply, an add and a shift that must
// equal `/` and `%` for every row a kernel divides (0 <= n < 2^31) by every page size.

#include "attnjit/row_divisor.cuh"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace attnjit {
namespace {

// The count of n in `rows` whose quotient or remainder by `size` is wrong.
int wrong_divisions(int size, const std::vector<int>& rows) {
  const RowDivisor divisor = make_row_divisor(size);
  int wrong = 0;
  for (const int n : rows) {
    if (divisor.quotient(n) != n / size || divisor.remainder(n) != n % size) ++wrong;
  }
  return wrong;
}

// Rows where a rounding error would show first: each multiple of `size` and its neighbours,
// near 0 and near 2^31, and the largest row.
std::vector<int> edge_rows(int size) {
  constexpr std::int64_t kMax = std::numeric_limits<int>::max();
  std::vector<int> rows;
  for (std::int64_t base : {std::int64_t{0}, kMax - kMax % size - 4 * std::int64_t{size}}) {
    for (std::int64_t k = 0; k <= 5; ++k) {
      for (std::int64_t d = -1; d <= 1; ++d) {
        const std::int64_t n = base + k * size + d;
        if (n >= 0 && n <= kMax) rows.push_back(static_cast<int>(n));
      }
    }
  }
  rows.push_back(static_cast<int>(kMax));
  return rows;
}

TEST_CASE("the page divisor divides every row by every page size exactly", "[runtime]") {
  // Every row below 2^16 by every page size up to 1100 (vLLM's 16, the hybrid models' 528 ...).
  std::vector<int> small(1 << 16);
  for (int n = 0; n < static_cast<int>(small.size()); ++n) small[n] = n;
  int wrong = 0;
  for (int size = 1; size <= 1100; ++size) wrong += wrong_divisions(size, small);
  CHECK(wrong == 0);
  // The edges of the range for sizes up to 2^31 - 1: every power of two and its neighbours, and
  // random sizes, with random rows.
  std::mt19937 random(2026);
  std::uniform_int_distribution<int> any_int(0, std::numeric_limits<int>::max());
  std::vector<int> sizes = {std::numeric_limits<int>::max(), 7808, 1 << 30};
  for (int shift = 1; shift < 31; ++shift) {
    for (const int d : {-1, 0, 1}) sizes.push_back((1 << shift) + d);
  }
  for (int i = 0; i < 2000; ++i) sizes.push_back(1 + any_int(random) % (1 << (1 + i % 30)));
  for (const int size : sizes) {
    INFO("page size " << size);
    std::vector<int> rows = edge_rows(size);
    for (int i = 0; i < 200; ++i) rows.push_back(any_int(random));
    CHECK(wrong_divisions(size, rows) == 0);
  }
}

TEST_CASE("a power-of-two page divides by its shift alone", "[runtime]") {
  for (int shift = 0; shift < 31; ++shift) {
    const RowDivisor divisor = make_row_divisor(1 << shift);
    CHECK(divisor.mul == 1u);  // mulhi(n, 1) is 0: the quotient is n >> shift
    CHECK(divisor.shift == shift);
  }
  const RowDivisor odd = make_row_divisor(528);
  CHECK(odd.shift == 10);
  CHECK(odd.quotient(527) == 0);
  CHECK(odd.quotient(528) == 1);
  CHECK(odd.remainder(1000) == 472);
}

}  // namespace
}  // namespace attnjit
