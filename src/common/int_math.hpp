// Integer helpers the host code shares.
#pragma once

#include <type_traits>

namespace attnjit {

// ceil(a / b) for a >= 0 and b > 0: the tiles (or blocks, or slices) that cover a extent.
template <typename Int>
constexpr Int ceil_div(Int a, Int b) {
  static_assert(std::is_integral_v<Int>);
  return (a + b - 1) / b;
}

}  // namespace attnjit
