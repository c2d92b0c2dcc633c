// What the tools print of a tile census (attnjit_variant_tile_census): the fraction of tiles the
// kernel skips, and of (query, key) pairs the mask keeps. Part of the test kit
// (testkit/CMakeLists.txt).
#pragma once

#include "attnjit/attnjit.h"

namespace attnjit::testkit {

inline double skipped_fraction(const attnjit_tile_census& census) {
  return census.tiles != 0 ? double(census.empty) / double(census.tiles) : 0.0;
}

inline double kept_fraction(const attnjit_tile_census& census) {
  return census.total_pairs != 0 ? double(census.kept_pairs) / double(census.total_pairs) : 0.0;
}

}  // namespace attnjit::testkit
