// Where a failed comparison's wrong elements are, in the terms of the kernels' geometry: a wrong
// swizzle, wgmma descriptor, accumulator fragment mapping or TMA box leaves a pattern (every row
// with row % 16 >= 8, one 8-column chunk, one 64-row consumer slice, columns swapped) that the
// largest error alone does not show. Printed by the kernel tests when a case fails, so that one
// run on a GPU says which encoding to look at.
#pragma once

#include <span>
#include <string>

namespace attnjit::testkit {

struct AnatomyInput {
  int batch = 0, heads = 0, len = 0, head_dim = 0;
  std::span<const double> actual;        // [batch, heads, len, head_dim]
  std::span<const double> expected;      // the same
  std::span<const double> actual_lse;    // [batch, heads, len]; empty: not compared
  std::span<const double> expected_lse;  // the same
  double tolerance = 0.0;                // an element is wrong when |actual - expected| > this
  double lse_tolerance = 1e-3;
};

// Several lines, each starting with "  "; only the findings that say something (a histogram
// whose wrong elements are spread evenly is one line, a confined one says so). "no wrong
// elements" when there are none.
std::string describe_error_anatomy(const AnatomyInput& input);

}  // namespace attnjit::testkit
