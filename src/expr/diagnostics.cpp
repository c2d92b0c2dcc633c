#include "expr/diagnostics.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fmt/format.h>

namespace attnjit::expr {

std::string format_diagnostics(std::string_view what, std::string_view source,
                               std::vector<Diagnostic> diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.span.begin < b.span.begin; });
  // Note: columns count bytes; control and non-ASCII bytes show as one placeholder each so that
  // the caret stays aligned.
  std::string line(source);
  for (char& c : line) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) c = ' ';
    if (byte >= 0x80) c = '?';
  }
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    if (!out.empty()) out += '\n';
    const int size = static_cast<int>(source.size());
    const int begin = std::clamp(d.span.begin, 0, size);
    const int end = std::clamp(d.span.end, begin + 1, size + 1);
    out += fmt::format("{}: col {}: {}", what, begin + 1, d.message);
    if (size > 0 && size <= 4096) {
      out += fmt::format("\n  {}\n  {}^{}", line, std::string(static_cast<std::size_t>(begin), ' '),
                         std::string(static_cast<std::size_t>(end - begin - 1), '~'));
    }
  }
  return out;
}

int edit_distance(std::string_view a, std::string_view b, int limit) {
  const int n = static_cast<int>(a.size()), m = static_cast<int>(b.size());
  if (std::abs(n - m) > limit) return limit + 1;
  // Three rows of the optimal string alignment table.
  std::vector<int> prev2(static_cast<std::size_t>(m + 1)), prev(static_cast<std::size_t>(m + 1)),
      cur(static_cast<std::size_t>(m + 1));
  for (int j = 0; j <= m; ++j) prev[static_cast<std::size_t>(j)] = j;
  for (int i = 1; i <= n; ++i) {
    cur[0] = i;
    int row_min = cur[0];
    for (int j = 1; j <= m; ++j) {
      const auto uj = static_cast<std::size_t>(j);
      const int cost = a[static_cast<std::size_t>(i - 1)] == b[uj - 1] ? 0 : 1;
      int v = std::min({prev[uj] + 1, cur[uj - 1] + 1, prev[uj - 1] + cost});
      if (i > 1 && j > 1 && a[static_cast<std::size_t>(i - 1)] == b[uj - 2] &&
          a[static_cast<std::size_t>(i - 2)] == b[uj - 1]) {
        v = std::min(v, prev2[uj - 2] + 1);
      }
      cur[uj] = v;
      row_min = std::min(row_min, v);
    }
    if (row_min > limit) return limit + 1;
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return std::min(prev[static_cast<std::size_t>(m)], limit + 1);
}

std::optional<std::string> suggest_name(std::string_view name,
                                        const std::vector<std::string_view>& candidates) {
  // Short names tolerate fewer edits, or everything would look like a typo of `b` or `h`.
  const int limit = name.size() <= 1 ? 0 : name.size() <= 3 ? 1 : 2;
  int best = limit + 1;
  std::optional<std::string> result;
  auto lower = [](std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  for (std::string_view candidate : candidates) {
    const int d = lower(name) == lower(candidate) ? 0 : edit_distance(name, candidate, limit);
    if (d < best) {
      best = d;
      result = std::string(candidate);
    }
  }
  return result;
}

}  // namespace attnjit::expr
