// Expressions exactly as deep as the parser accepts (expr::kMaxTreeDepth levels), in the shapes
// that make the recursive walks (type checking, folding, printing, lowering) go deepest.
#pragma once

#include <string>
#include <vector>

#include "expr/parser.hpp"

namespace attnjit::test {

struct DeepSource {
  const char* what;
  std::string mask, score;  // the other one is left as the default
};

// `head LINK LINK ... tail` with `links` copies of the link.
inline std::string repeat_link(std::string head, const char* link, int links, const char* tail = "") {
  for (int i = 0; i < links; ++i) head += link;
  return head + tail;
}

inline std::vector<DeepSource> deepest_sources() {
  constexpr int depth = expr::kMaxTreeDepth;
  // A chain of n operators over leaves is n + 1 levels deep; a comparison on top adds one.
  return {
      {"int chain", repeat_link("q_idx", " + 1", depth - 2, " > 0"), ""},
      {"bool chain", repeat_link("q_idx > 0", " && kv_idx > 1", depth - 2), ""},
      {"float chain", "", repeat_link("score", " * 0.5", depth - 1)},
      {"promoting chain", "", repeat_link("score", " + q_idx", depth - 2)},
      {"calls in a chain", repeat_link("q_idx", " - min(h, 3)", depth - 3, " > 0"), ""},
      // 63 nested calls (the nesting limit is 64) around a chain of the remaining depth.
      {"nested calls around a chain",
       repeat_link("", "abs(", 63) + repeat_link("q_idx", " + 1", depth - 2 - 63) +
           std::string(63, ')') + " > 0",
       ""},
  };
}

}  // namespace attnjit::test
