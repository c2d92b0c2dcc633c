// Division of a key row by a page size known only at launch (FwdParams::kv_page): a paged cache's
// row j is row j % size of its page j / size. Shared by the host (which builds the divisor and
// tests it) and the kernels.
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

// n / size as (mulhi(n, mul) + n) >> shift, with shift = ceil(log2(size)) and
// mul = floor(2^32 * (2^shift - size) / size) + 1 (Granlund and Montgomery, "Division by
// invariant integers using multiplication", 1994: the multiplier 2^32 + mul has 33 bits, its top
// bit the "+ n"). Exact for 0 <= n < 2^31 and 1 <= size < 2^31: the multiplier exceeds
// 2^(32 + shift) / size by at most 1, which moves n / size by less than n / 2^(32 + shift) <
// 1 / size, too little to reach the next integer; and the sum stays below 2^32. A power of two
// gets mul 1 (mulhi 0), so the quotient is the shift it always was. Three instructions where a
// division by a run-time int is some twenty; tests/runtime checks it against `/`.
struct RowDivisor {
  int size;
  unsigned mul;
  int shift;

  ATTNJIT_HD int quotient(int n) const {
    const unsigned u = static_cast<unsigned>(n);
    const auto high = static_cast<unsigned>((static_cast<unsigned long long>(u) * mul) >> 32);
    return static_cast<int>((high + u) >> shift);
  }
  ATTNJIT_HD int remainder(int n) const { return n - quotient(n) * size; }
};

ATTNJIT_HD RowDivisor make_row_divisor(int size) {
  int shift = 0;
  while ((1ll << shift) < size) ++shift;
  const unsigned long long excess = (1ull << shift) - static_cast<unsigned long long>(size);
  const auto mul = static_cast<unsigned>((excess << 32) / static_cast<unsigned>(size) + 1);
  return {size, mul, shift};
}

}  // namespace attnjit
