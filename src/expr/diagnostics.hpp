// Error reports with spans, formatted as `mask: col N: reason`, the source line and a caret.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "expr/ast.hpp"

namespace attnjit::expr {

struct Diagnostic {
  Span span;
  std::string message;
};

class Diagnostics {
 public:
  void report(Span span, std::string message) { list_.push_back({span, std::move(message)}); }
  bool empty() const { return list_.empty(); }
  const std::vector<Diagnostic>& list() const { return list_; }

 private:
  std::vector<Diagnostic> list_;
};

// One block per diagnostic, in source order, e.g.
//   mask: col 10: unknown name 'kv_idz' (did you mean 'kv_idx'?)
//     q_idx >= kv_idz
//              ^~~~~~
std::string format_diagnostics(std::string_view what, std::string_view source,
                               std::vector<Diagnostic> diagnostics);

// Optimal string alignment distance (insertions, deletions, substitutions, transpositions),
// or limit + 1 when it exceeds `limit`.
int edit_distance(std::string_view a, std::string_view b, int limit);

// The closest candidate within edit distance 2 (1 for names of up to 3 characters, only a case
// difference for one-character names), if any; ties go to the earliest candidate.
std::optional<std::string> suggest_name(std::string_view name,
                                        const std::vector<std::string_view>& candidates);

}  // namespace attnjit::expr
