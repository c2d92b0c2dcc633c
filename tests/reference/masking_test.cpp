#include <catch2/catch.hpp>
#include <cmath>
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

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

bool row_is_zero(const HostTensor& out, int b, int h, int row, int head_dim) {
  for (int d = 0; d < head_dim; ++d) {
    if (out.at(b, h, row, d) != 0.0f) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("fully masked rows give zero output and -inf lse") {
  const DType dtype = GENERATE(DType::bf16, DType::fp32);
  const AttentionShape shape{1, 2, 1, 70, 90, 32};
  ProblemOptions options;
  options.dtype = dtype;
  HostProblem problem = make_problem(shape, options);
  std::vector<double> expected_out, expected_lse;

  SECTION("every row masked") {
    auto variant = make_variant_from("none", "kv_idx > q_idx + 1000", "", {});
    const TileStats stats = attention_forward(variant->mask, variant->score, variant->args, shape,
                                              problem.buffers(), {0, 32, 32});
    CHECK(stats.empty == stats.total);
    for (int h = 0; h < shape.num_heads_q; ++h) {
      for (int row = 0; row < shape.q_len; ++row) {
        CHECK(row_is_zero(problem.out, 0, h, row, shape.head_dim));
      }
    }
    for (const float lse : problem.lse) CHECK(lse == kNegInf);
    naive_attention(variant->mask, variant->score, variant->args, shape, problem.buffers(),
                    expected_out, expected_lse);
    for (const double value : expected_out) CHECK(value == 0.0);
    for (const double lse : expected_lse) CHECK(lse == -std::numeric_limits<double>::infinity());
  }

  SECTION("a mix of masked and kept rows") {
    // Every third query keeps nothing; the others are causal.
    auto variant = make_variant_from("mixed", "q_idx % 3 != 0 && kv_idx <= q_idx", "", {});
    attention_forward(variant->mask, variant->score, variant->args, shape, problem.buffers(),
                      {0, 16, 16});
    for (int h = 0; h < shape.num_heads_q; ++h) {
      for (int row = 0; row < shape.q_len; ++row) {
        INFO("h=" << h << " row=" << row);
        const float lse = problem.lse[static_cast<std::size_t>(h * shape.q_len + row)];
        CHECK(row_is_zero(problem.out, 0, h, row, shape.head_dim) == (row % 3 == 0));
        CHECK((lse == kNegInf) == (row % 3 == 0));
        CHECK(!std::isnan(lse));
      }
    }
    naive_attention(variant->mask, variant->score, variant->args, shape, problem.buffers(),
                    expected_out, expected_lse);
    CHECK(within(compare_output(shape, problem.buffers(), expected_out), output_tolerance(dtype)));
    CHECK(within(compare_lse(shape, problem.lse.data(), expected_lse), lse_tolerance()));
  }

  SECTION("rows whose kept scores are all -inf") {
    // The score adds a per-query offset that is -inf on even queries.
    auto variant = make_variant_from("neg_inf_rows", "kv_idx <= q_idx + 5", "score + off[q_idx]",
                                     make_signature({}, {"off:float32[1]"}));
    std::vector<float> offsets(static_cast<std::size_t>(shape.q_len));
    for (int i = 0; i < shape.q_len; ++i) {
      offsets[static_cast<std::size_t>(i)] = i % 2 == 0 ? kNegInf : 0.25f;
    }
    attach_float_vector(*variant, 0, offsets);
    attention_forward(variant->mask, variant->score, variant->args, shape, problem.buffers());
    for (int row = 0; row < shape.q_len; ++row) {
      INFO("row=" << row);
      CHECK(row_is_zero(problem.out, 0, 1, row, shape.head_dim) == (row % 2 == 0));
      CHECK((problem.lse[static_cast<std::size_t>(shape.q_len + row)] == kNegInf) ==
            (row % 2 == 0));
    }
    naive_attention(variant->mask, variant->score, variant->args, shape, problem.buffers(),
                    expected_out, expected_lse);
    CHECK(within(compare_output(shape, problem.buffers(), expected_out), output_tolerance(dtype)));
    CHECK(within(compare_lse(shape, problem.lse.data(), expected_lse), lse_tolerance()));
  }
}

TEST_CASE("block analysis skips the tiles a mask rules out") {
  ProblemOptions options;
  options.dtype = DType::bf16;
  options.with_lse = false;

  SECTION("causal on a square problem skips about half of the tiles") {
    const AttentionShape shape{1, 2, 2, 1024, 1024, 16};
    auto variant = make_variant("causal", shape);
    HostProblem problem = make_problem(shape, options);
    const TileStats stats = attention_forward(variant->mask, variant->score, variant->args, shape,
                                              problem.buffers(), {0, 64, 64});
    // 16 x 16 tiles per head: 120 above the diagonal, 16 on it, 120 below.
    CHECK(stats.total == 2 * 256);
    CHECK(stats.empty == 2 * 120);
    CHECK(stats.partial == 2 * 16);
    CHECK(stats.full == 2 * 120);
    CHECK(stats.skipped_fraction() == Approx(120.0 / 256.0));
  }

  SECTION("document mask with sorted ids skips the off-diagonal blocks") {
    const AttentionShape shape{1, 1, 1, 512, 512, 16};
    auto variant = make_variant_from("documents", "doc[q_idx] == doc[kv_idx]", "",
                                     make_signature({}, {"doc:int32[1]"}));
    std::vector<int> ids(512);
    for (int i = 0; i < 512; ++i) ids[static_cast<std::size_t>(i)] = i / 128;  // 4 documents
    attach_int_tensor(*variant, 0, ids);
    HostProblem problem = make_problem(shape, options);
    const TileStats stats = attention_forward(variant->mask, variant->score, variant->args, shape,
                                              problem.buffers(), {0, 64, 64});
    // 8 x 8 tiles; each document covers a 2 x 2 block of them on the diagonal.
    CHECK(stats.total == 64);
    CHECK(stats.full == 16);
    CHECK(stats.empty == 48);
    CHECK(stats.partial == 0);
  }

  SECTION("document mask with uneven sorted ids still skips and stays correct") {
    const AttentionShape shape{1, 2, 2, 300, 300, 32};
    auto variant = make_variant("document_sorted", shape);
    HostProblem problem = make_problem(shape, options);
    const TileStats stats = attention_forward(variant->mask, variant->score, variant->args, shape,
                                              problem.buffers(), {0, 32, 32});
    CHECK(stats.empty > stats.total / 4);
    CHECK(stats.partial > 0);
    std::vector<double> expected_out, expected_lse;
    naive_attention(variant->mask, variant->score, variant->args, shape, problem.buffers(),
                    expected_out, expected_lse);
    CHECK(within(compare_output(shape, problem.buffers(), expected_out),
                 output_tolerance(DType::bf16)));
  }

  SECTION("a mask that keeps everything makes every tile full") {
    const AttentionShape shape{2, 2, 1, 100, 70, 16};
    auto variant = make_variant("noop", shape);
    HostProblem problem = make_problem(shape, options);
    const TileStats stats = attention_forward(variant->mask, variant->score, variant->args, shape,
                                              problem.buffers(), {0, 64, 64});
    CHECK(stats.total == 2 * 2 * 2 * 2);
    CHECK(stats.full == stats.total);
    CHECK(stats.skipped_fraction() == 0.0);
  }
}
