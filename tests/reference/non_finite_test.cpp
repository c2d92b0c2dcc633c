// NaN and inf in the inputs: a row that a NaN or +inf score reaches is NaN (output and lse), as
// in FlashAttention; every other row is unaffected, and a masked row stays zero with lse -inf.
// Both the tiled reference and the naive one, which the kernel tests compare against.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "reference/attention.hpp"
#include "testkit/internal/compare.hpp"
#include "reference/naive.hpp"
#include "testkit/internal/random_inputs.hpp"
#include "test_variants.hpp"

using namespace attnjit;
using namespace attnjit::reference;
using namespace attnjit::testing;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// One query head per kv head group of two (GQA), so a planted key reaches both query heads.
const AttentionShape kShape{1, 2, 1, 70, 90, 32};

enum class RowIs { nan, masked, finite };

struct Case {
  std::string name;
  std::string mask;
  std::string score;
  std::function<void(HostProblem&)> plant;
  std::function<RowIs(const HostProblem&, int h, int row)> expected;
};

std::vector<Case> cases() {
  const std::string causal = "kv_idx <= q_idx";
  return {
      {"one NaN in q reaches its own row only", causal, "",
       [](HostProblem& p) { p.q.set(0, 1, 10, 5, kNaN); },
       [](const HostProblem&, int h, int row) {
         return h == 1 && row == 10 ? RowIs::nan : RowIs::finite;
       }},
      {"a whole q row of NaN (every score NaN) is NaN, not masked", causal, "",
       [](HostProblem& p) {
         for (int d = 0; d < kShape.head_dim; ++d) p.q.set(0, 0, 3, d, kNaN);
       },
       [](const HostProblem&, int h, int row) {
         return h == 0 && row == 3 ? RowIs::nan : RowIs::finite;
       }},
      {"one NaN in k reaches every row that keeps its key", causal, "",
       [](HostProblem& p) { p.k.set(0, 0, 30, 7, kNaN); },
       [](const HostProblem&, int, int row) { return row >= 30 ? RowIs::nan : RowIs::finite; }},
      {"+inf in k gives +inf scores (NaN rows) or -inf scores (ignored pairs)", causal, "",
       [](HostProblem& p) { p.k.set(0, 0, 40, 0, kInf); },
       [](const HostProblem& p, int h, int row) {
         // score = q[row][0] * inf + finite: +inf where q[row][0] > 0.
         return row >= 40 && p.q.at(0, h, row, 0) > 0.0f ? RowIs::nan : RowIs::finite;
       }},
      {"NaN in a masked row leaves it masked", "kv_idx <= q_idx && q_idx != 12", "",
       [](HostProblem& p) { p.q.set(0, 0, 12, 0, kNaN); },
       [](const HostProblem&, int, int row) { return row == 12 ? RowIs::masked : RowIs::finite; }},
      {"NaN in a key no row keeps reaches nothing", causal, "",
       [](HostProblem& p) { p.k.set(0, 0, 80, 2, kNaN); },  // kv 80 > every q_idx (70 rows)
       [](const HostProblem&, int, int) { return RowIs::finite; }},
      {"a NaN score from the score expression", causal, "score + log(float(kv_idx) - 4.5)",
       [](HostProblem&) {},  // log of a negative number for kv_idx <= 4: every row keeps one
       [](const HostProblem&, int, int) { return RowIs::nan; }},
  };
}

void check_rows(const Case& c, const HostProblem& problem, const std::vector<float>& out_rows_lse,
                const std::function<float(int h, int row, int d)>& out) {
  for (int h = 0; h < kShape.num_heads_q; ++h) {
    for (int row = 0; row < kShape.q_len; ++row) {
      INFO("h=" << h << " row=" << row);
      const RowIs expected = c.expected(problem, h, row);
      const float lse = out_rows_lse[static_cast<std::size_t>(h * kShape.q_len + row)];
      int nan = 0, zero = 0;
      for (int d = 0; d < kShape.head_dim; ++d) {
        nan += std::isnan(out(h, row, d)) ? 1 : 0;
        zero += out(h, row, d) == 0.0f ? 1 : 0;
      }
      switch (expected) {
        case RowIs::nan:
          CHECK(nan == kShape.head_dim);
          CHECK(std::isnan(lse));
          break;
        case RowIs::masked:
          CHECK(zero == kShape.head_dim);
          CHECK(lse == -kInf);
          break;
        case RowIs::finite:
          CHECK(nan == 0);
          CHECK(std::isfinite(lse));
          break;
      }
    }
  }
}

}  // namespace

TEST_CASE("a NaN or +inf score makes exactly the rows it reaches NaN") {
  const DType dtype = GENERATE(DType::bf16, DType::fp32);
  for (const Case& c : cases()) {
    INFO(c.name << " (" << dtype_name(dtype) << ")");
    ProblemOptions options;
    options.dtype = dtype;
    HostProblem problem = make_problem(kShape, options);
    c.plant(problem);
    auto variant = make_variant_from(c.name, c.mask, c.score, {});

    attention_forward(variant->mask, variant->score, variant->args, kShape, problem.buffers(),
                      {0, 16, 32});
    check_rows(c, problem, problem.lse,
               [&](int h, int row, int d) { return problem.out.at(0, h, row, d); });

    std::vector<double> expected_out, expected_lse;
    naive_attention(variant->mask, variant->score, variant->args, kShape, problem.buffers(),
                    expected_out, expected_lse);
    const std::vector<float> naive_lse(expected_lse.begin(), expected_lse.end());
    check_rows(c, problem, naive_lse, [&](int h, int row, int d) {
      const auto row_index = static_cast<std::size_t>(h * kShape.q_len + row);
      return static_cast<float>(expected_out[row_index * kShape.head_dim + d]);
    });
    // And the two agree everywhere else, NaN for NaN.
    CHECK(within(compare_output(kShape, problem.buffers(), expected_out), output_tolerance(dtype)));
    CHECK(within(compare_lse(kShape, problem.lse.data(), expected_lse), lse_tolerance()));
  }
}
