// The rows of a packed GQA decoding step (FwdParams::pack_gqa): row r of a block is query
// r / group of query head r % group of the block's group. Shared by the host (tests) and the
// kernels.
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

// A packed row's query, row / group, as (row * packed_row_inverse(group)) >> kPackedRowShift:
// exact for rows below kPackedRowLimit and groups up to 32 (the rounding adds under
// kPackedRowLimit / 2^kPackedRowShift = 1/2048, less than the 1/32 a quotient's fraction stays
// below 1; tests/runtime checks every pair), where a division by the run-time group is some 15
// instructions.
constexpr int kPackedRowShift = 21;
constexpr int kPackedRowLimit = 1024;
ATTNJIT_HD unsigned packed_row_inverse(int group) {
  return ((1u << kPackedRowShift) + static_cast<unsigned>(group) - 1u) /
         static_cast<unsigned>(group);
}
ATTNJIT_HD int packed_row_query(int row, unsigned inverse) {
  return static_cast<int>((static_cast<unsigned>(row) * inverse) >> kPackedRowShift);
}

}  // namespace attnjit
