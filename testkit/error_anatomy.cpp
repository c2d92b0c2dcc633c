#include "testkit/error_anatomy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace attnjit::testkit {
namespace {

constexpr double kMatchShare = 0.95;   // a permutation must explain this share of the values
constexpr int kSampledRows = 512;      // rows the column search compares (evenly spaced)
constexpr int kSearchedRows = 64;      // wrong rows the row search looks at
constexpr int kQueryTile = 128;        // the kernels' query tile (block_m)
constexpr int kConsumerRows = 64;      // rows of one wgmma consumer warpgroup
constexpr int kChunk = 8;              // 16 bytes of bf16/fp16: the swizzle unit
constexpr int kBoxColumns = 64;        // one 128-byte TMA box row
constexpr std::size_t kListedBins = 16;  // wider histograms list only the bins that are hit

bool differs(double actual, double expected, double tolerance) {
  if (std::isnan(actual) && std::isnan(expected)) return false;
  if (!std::isfinite(actual) || !std::isfinite(expected)) return actual != expected;
  return std::abs(actual - expected) > tolerance;
}

struct Shape {
  int batch, heads, len, head_dim;
  std::int64_t rows() const { return static_cast<std::int64_t>(batch) * heads * len; }
  std::int64_t at(std::int64_t row, int d) const { return row * head_dim + d; }
};

// Wrong and total counts per bin of one way of grouping the elements.
struct Histogram {
  std::string title;
  std::vector<std::string> labels;
  std::vector<std::int64_t> wrong, total;

  Histogram(std::string name, std::vector<std::string> bin_labels)
      : title(std::move(name)), labels(std::move(bin_labels)), wrong(labels.size()),
        total(labels.size()) {}

  // "  title: a 0%, b 50% (only b)"; empty when the grouping has a single bin.
  std::string line() const {
    if (labels.size() < 2) return {};
    std::string text = "  " + title + ":";
    if (labels.size() > kListedBins) return text + summary() + "\n";
    std::vector<std::string> hit;
    bool some_clean = false;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (total[i] == 0) continue;
      const double share = 100.0 * static_cast<double>(wrong[i]) / static_cast<double>(total[i]);
      text += fmt::format("{} {} {:.0f}%", i == 0 ? "" : ",", labels[i], share);
      if (wrong[i] > 0) {
        hit.push_back(labels[i]);
      } else {
        some_clean = true;
      }
    }
    if (some_clean && !hit.empty()) {
      text += " (wrong only in";
      for (const std::string& label : hit) text += " " + label;
      text += ")";
    }
    return text + "\n";
  }

  // " wrong in 3 of 40: t0 t7 t9" (the first kListedBins of them).
  std::string summary() const {
    std::vector<std::string> hit;
    std::size_t present = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      present += total[i] > 0;
      if (wrong[i] > 0) hit.push_back(labels[i]);
    }
    std::string text = fmt::format(" wrong in {} of {}:", hit.size(), present);
    for (std::size_t i = 0; i < hit.size() && i < kListedBins; ++i) text += " " + hit[i];
    return text + (hit.size() > kListedBins ? " ..." : "");
  }
};

std::vector<std::string> numbered(int count, const std::function<std::string(int)>& label) {
  std::vector<std::string> labels;
  for (int i = 0; i < count; ++i) labels.push_back(label(i));
  return labels;
}

std::string histograms(const Shape& s, const std::vector<char>& wrong) {
  const int tiles = (s.len + kQueryTile - 1) / kQueryTile;
  Histogram half("rows by row % 16 (the accumulators' two 8-row halves)", {"0-7", "8-15"});
  Histogram group("rows by 16-row warp slice of a 64-row warpgroup",
                  numbered(4, [](int i) { return fmt::format("{}-{}", 16 * i, 16 * i + 15); }));
  Histogram consumer("rows by 64-row consumer slice of a 128-row tile", {"0-63", "64-127"});
  Histogram tile("rows by 128-row query tile",
                 numbered(tiles, [](int i) { return fmt::format("t{}", i); }));
  Histogram pair("columns by d % 8 (a lane's column pair)",
                 numbered(4, [](int i) { return fmt::format("{}-{}", 2 * i, 2 * i + 1); }));
  Histogram chunk("columns by 8-column (16-byte) chunk",
                  numbered(s.head_dim / kChunk, [](int i) { return fmt::format("c{}", i); }));
  Histogram box("columns by 64-column TMA box",
                numbered((s.head_dim + kBoxColumns - 1) / kBoxColumns,
                         [](int i) { return fmt::format("b{}", i); }));
  Histogram head("(batch, head)", numbered(s.batch * s.heads, [&](int i) {
                   return fmt::format("({},{})", i / s.heads, i % s.heads);
                 }));
  for (std::int64_t row = 0; row < s.rows(); ++row) {
    const int r = static_cast<int>(row % s.len);
    for (int d = 0; d < s.head_dim; ++d) {
      const std::int64_t w = wrong[s.at(row, d)];
      auto count = [&](Histogram& h, std::size_t bin) {
        if (bin >= h.labels.size()) return;
        h.wrong[bin] += w;
        ++h.total[bin];
      };
      count(half, static_cast<std::size_t>(r % 16 / 8));
      count(group, static_cast<std::size_t>(r % kConsumerRows / 16));
      count(consumer, static_cast<std::size_t>(r % kQueryTile / kConsumerRows));
      count(tile, static_cast<std::size_t>(r / kQueryTile));
      count(pair, static_cast<std::size_t>(d % kChunk / 2));
      count(chunk, static_cast<std::size_t>(d / kChunk));
      count(box, static_cast<std::size_t>(d / kBoxColumns));
      count(head, static_cast<std::size_t>(row / s.len));
    }
  }
  std::string text;
  for (const Histogram* h : {&half, &group, &consumer, &tile, &pair, &chunk, &box, &head}) {
    text += h->line();
  }
  return text;
}

// "8..15 <- 16..23, 16..23 <- 8..15": runs of consecutive sources and targets.
std::string runs(const std::vector<std::pair<int, int>>& mapping) {
  std::string text;
  std::size_t i = 0;
  while (i < mapping.size()) {
    std::size_t j = i;
    while (j + 1 < mapping.size() && mapping[j + 1].first == mapping[j].first + 1 &&
           mapping[j + 1].second == mapping[j].second + 1) {
      ++j;
    }
    if (!text.empty()) text += ", ";
    text += i == j ? fmt::format("{} <- {}", mapping[i].first, mapping[i].second)
                   : fmt::format("{}..{} <- {}..{}", mapping[i].first, mapping[j].first,
                                 mapping[i].second, mapping[j].second);
    i = j + 1;
  }
  return text;
}

// ", the same as index ^ k for every one" when one constant k explains the mapping.
std::string xor_rule(const std::vector<std::pair<int, int>>& mapping) {
  if (mapping.empty()) return {};
  const int k = mapping.front().first ^ mapping.front().second;
  for (const auto& [to, from] : mapping) {
    if ((to ^ from) != k) return {};
  }
  return fmt::format(" (every one is index ^ {})", k);
}

// Wrong columns that hold another reference column (same rows): a swizzle or fragment mapping.
std::string column_permutation(const AnatomyInput& in, const Shape& s,
                               const std::vector<char>& wrong) {
  const std::int64_t step = std::max<std::int64_t>(1, s.rows() / kSampledRows);
  std::vector<std::pair<int, int>> mapping;
  int wrong_columns = 0;
  for (int d = 0; d < s.head_dim; ++d) {
    std::int64_t wrong_rows = 0, sampled = 0;
    for (std::int64_t row = 0; row < s.rows(); row += step, ++sampled) {
      wrong_rows += wrong[s.at(row, d)];
    }
    if (2 * wrong_rows < sampled) continue;  // mostly right: not a moved column
    ++wrong_columns;
    for (int from = 0; from < s.head_dim; ++from) {
      if (from == d) continue;
      std::int64_t matches = 0;
      for (std::int64_t row = 0; row < s.rows(); row += step) {
        matches += !differs(in.actual[s.at(row, d)], in.expected[s.at(row, from)], in.tolerance);
      }
      if (static_cast<double>(matches) >= kMatchShare * static_cast<double>(sampled)) {
        mapping.emplace_back(d, from);
        break;
      }
    }
  }
  if (mapping.empty()) return {};
  return fmt::format("  columns holding other reference columns ({} of the {} mostly wrong): {}{}\n",
                     mapping.size(), wrong_columns, runs(mapping), xor_rule(mapping));
}

// Wrong rows that hold another reference row of their 128-row tile (same head).
std::string row_permutation(const AnatomyInput& in, const Shape& s,
                            const std::vector<char>& wrong) {
  std::vector<std::pair<int, int>> mapping;  // rows within the tile
  int searched = 0;
  for (std::int64_t row = 0; row < s.rows() && searched < kSearchedRows; ++row) {
    std::int64_t wrong_values = 0;
    for (int d = 0; d < s.head_dim; ++d) wrong_values += wrong[s.at(row, d)];
    if (2 * wrong_values < s.head_dim) continue;
    ++searched;
    const int r = static_cast<int>(row % s.len);
    const std::int64_t tile_start = row - r % kQueryTile;
    const int tile_rows = std::min(kQueryTile, s.len - (r - r % kQueryTile));
    for (int other = 0; other < tile_rows; ++other) {
      const std::int64_t from = tile_start + other;
      if (from == row) continue;
      int matches = 0;
      for (int d = 0; d < s.head_dim; ++d) {
        matches += !differs(in.actual[s.at(row, d)], in.expected[s.at(from, d)], in.tolerance);
      }
      if (matches >= kMatchShare * s.head_dim) {
        mapping.emplace_back(r % kQueryTile, other);
        break;
      }
    }
  }
  if (mapping.empty()) return {};
  std::sort(mapping.begin(), mapping.end());
  mapping.erase(std::unique(mapping.begin(), mapping.end()), mapping.end());
  return fmt::format(
      "  rows holding other reference rows of their tile ({} of the first {} mostly wrong rows; "
      "row in tile <- reference row): {}{}\n",
      mapping.size(), searched, runs(mapping), xor_rule(mapping));
}

std::string zero_rows(const AnatomyInput& in, const Shape& s) {
  std::int64_t zero_not_expected = 0, expected_zero_not = 0;
  for (std::int64_t row = 0; row < s.rows(); ++row) {
    bool actual_zero = true, expected_zero = true;
    for (int d = 0; d < s.head_dim; ++d) {
      actual_zero = actual_zero && in.actual[s.at(row, d)] == 0.0;
      expected_zero = expected_zero && in.expected[s.at(row, d)] == 0.0;
    }
    zero_not_expected += actual_zero && !expected_zero;
    expected_zero_not += expected_zero && !actual_zero;
  }
  std::string text;
  if (zero_not_expected > 0) {
    text += fmt::format(
        "  {} rows are all zero where the reference's are not (a missed store, or a row taken "
        "for fully masked)\n",
        zero_not_expected);
  }
  if (expected_zero_not > 0) {
    text += fmt::format(
        "  {} rows should be all zero (fully masked) and are not\n", expected_zero_not);
  }
  return text;
}

std::string lse_verdict(const AnatomyInput& in) {
  if (in.actual_lse.empty() || in.expected_lse.size() != in.actual_lse.size()) {
    return "  lse not compared\n";
  }
  std::int64_t wrong_rows = 0;
  double max_error = 0.0;
  for (std::size_t i = 0; i < in.actual_lse.size(); ++i) {
    if (differs(in.actual_lse[i], in.expected_lse[i], in.lse_tolerance)) ++wrong_rows;
    if (std::isfinite(in.actual_lse[i]) && std::isfinite(in.expected_lse[i])) {
      max_error = std::max(max_error, std::abs(in.actual_lse[i] - in.expected_lse[i]));
    }
  }
  if (wrong_rows == 0) {
    return fmt::format(
        "  lse matches (max error {:.1e}): Q K^T, the mask and the softmax statistics are right; "
        "suspect V's load or layout, P V or the output store\n",
        max_error);
  }
  return fmt::format(
      "  lse wrong in {} of {} rows: suspect Q or K's load or layout, Q K^T, the mask or the "
      "softmax\n",
      wrong_rows, in.actual_lse.size());
}

}  // namespace

std::string describe_error_anatomy(const AnatomyInput& in) {
  const Shape s{in.batch, in.heads, in.len, in.head_dim};
  const std::size_t count = static_cast<std::size_t>(s.rows()) * s.head_dim;
  if (in.actual.size() != count || in.expected.size() != count || count == 0) {
    return fmt::format("  (no anatomy: {} and {} values for a [{}, {}, {}, {}] output)\n",
                       in.actual.size(), in.expected.size(), in.batch, in.heads, in.len,
                       in.head_dim);
  }
  std::vector<char> wrong(count);
  std::int64_t wrong_count = 0, non_finite = 0;
  for (std::size_t i = 0; i < count; ++i) {
    wrong[i] = differs(in.actual[i], in.expected[i], in.tolerance);
    wrong_count += wrong[i];
    non_finite += wrong[i] && !std::isfinite(in.actual[i]) && std::isfinite(in.expected[i]);
  }
  std::string text = lse_verdict(in);
  if (wrong_count == 0) return text + "  no wrong elements in the output\n";
  text += fmt::format("  {} of {} output elements wrong ({:.1f}%, |error| > {:.1e})", wrong_count,
                      count, 100.0 * static_cast<double>(wrong_count) / static_cast<double>(count),
                      in.tolerance);
  text += non_finite > 0 ? fmt::format(", {} of them NaN or inf where the reference is finite\n",
                                       non_finite)
                         : "\n";
  text += histograms(s, wrong);
  text += column_permutation(in, s, wrong);
  text += row_permutation(in, s, wrong);
  text += zero_rows(in, s);
  return text;
}

}  // namespace attnjit::testkit
