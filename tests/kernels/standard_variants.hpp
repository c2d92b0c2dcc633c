// The standard variants of cache/standard.json, parsed into expressions for the kernel tests.
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

}  // namespace attnjit::test
