// The standard variants of cache/standard.json (and the decoding manifest's, cache/decoding.json),
// parsed into expressions for the kernel tests.
#pragma once

#include <string>
#include <vector>

#include "expr/expression.hpp"

namespace attnjit::test {

struct StandardVariant {
  std::string name;
  expr::Expression mask;
  expr::Expression score;
};

// Reads ATTNJIT_SOURCE_DIR/cache/standard.json once.
const std::vector<StandardVariant>& standard_variants();
// Reads ATTNJIT_SOURCE_DIR/cache/decoding.json once.
const std::vector<StandardVariant>& decoding_variants();

}  // namespace attnjit::test
