// CPU evaluation: integer edge semantics, tensor bounds, promotion (src/expr/evaluate.cpp).
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include <catch2/catch.hpp>

#include "expr/eval_support.hpp"
#include "expr/test_support.hpp"

using namespace attnjit;
using namespace attnjit::test;

namespace {

constexpr int kIntMin = std::numeric_limits<int>::min();
constexpr int kIntMax = std::numeric_limits<int>::max();

// Evaluates the int expression `source` (reading W and cap) and returns its value, found by
// comparing with the `prefix` parameter so that no float rounding gets in the way.
bool int_result_is(const std::string& source, int w, float cap, int expected) {
  const auto mask = parse_mask(fmt::format("({}) == prefix", source));
  VariantArgs args{};
  args.scalars[0] = w;
  args.scalars[1] = float_bits(cap);
  args.scalars[2] = expected;
  return expr::evaluate_mask(mask, args, element(0, 0));
}

}  // namespace

TEST_CASE("integer arithmetic has defined edge semantics") {
  auto [source, w, expected] = GENERATE(table<const char*, int, int>({
      {"W + 1", kIntMax, kIntMin},
      {"W * 2", kIntMax, -2},
      {"W - 1", kIntMin, kIntMax},
      {"-W", kIntMin, kIntMin},
      {"W / 0", 7, 0},
      {"W % 0", 7, 0},
      {"W / -1", kIntMin, kIntMin},
      {"W % -1", kIntMin, 0},
      {"W / 2", -7, -3},
      {"W % 2", -7, -1},
      {"1 << W", 33, 2},
      {"W << 31", 1, kIntMin},
      {"1 << W", -1, kIntMin},
      {"W >> 1", -8, -4},
      {"W >> 33", -8, -4},
      {"W >> W", -1, -1},
      {"abs(W)", kIntMin, kIntMin},
      {"abs(W)", -5, 5},
      {"clamp(W, 0, 10)", 42, 10},
      {"W & 6 | 1 ^ 8", 7, 15},
      {"~W", 0, -1},
      {"int(W > 0) + int(true)", 3, 2},
  }));
  CAPTURE(source, w);
  CHECK(int_result_is(source, w, 0.0f, expected));
}

TEST_CASE("int(float) maps NaN to 0, saturates and truncates toward zero") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto [cap, expected] = GENERATE_COPY(table<float, int>({
      {nan, 0},
      {1e20f, kIntMax},
      {-1e20f, kIntMin},
      {std::numeric_limits<float>::infinity(), kIntMax},
      {2.7f, 2},
      {-2.7f, -2},
      {2147483520.0f, 2147483520},
  }));
  CAPTURE(cap);
  CHECK(int_result_is("int(cap)", 0, cap, expected));
}

TEST_CASE("tensor reads are bounds-checked and row-major") {
  const std::vector<int> doc = {10, 20, 30, 40};
  const std::vector<float> bias = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f};  // 2 x 3
  VariantArgs args{};
  args.tensors[0] = tensor_arg(doc, 4);
  args.tensors[1] = tensor_arg(bias, 2, 3, 2);
  auto read_doc = [&](int i) {
    return expr::evaluate_score(parse_score("float(doc[q_idx])"), args, element(i, 0), 0.0f);
  };
  CHECK(read_doc(0) == 10.0f);
  CHECK(read_doc(3) == 40.0f);
  CHECK(read_doc(4) == 0.0f);
  CHECK(read_doc(-1) == 0.0f);
  auto read_bias = [&](int i, int j) {
    return expr::evaluate_score(parse_score("bias[q_idx, kv_idx]"), args, element(i, j), 0.0f);
  };
  CHECK(read_bias(1, 2) == 5.5f);
  CHECK(read_bias(0, 1) == 1.5f);
  CHECK(read_bias(0, 3) == 0.0f);  // in range as a flat index, out of range as a column
  CHECK(read_bias(2, 0) == 0.0f);
  CHECK(read_bias(-1, 1) == 0.0f);
}

TEST_CASE("the standard variants evaluate as specified") {
  VariantArgs args{};
  args.scalars[0] = 4;                   // W
  args.scalars[1] = float_bits(30.0f);   // cap
  args.scalars[2] = 3;                   // prefix
  SECTION("masks") {
    const auto causal = parse_mask("q_idx >= kv_idx");
    const auto window = parse_mask("q_idx >= kv_idx && q_idx - kv_idx < W");
    const auto prefix = parse_mask("kv_idx < prefix || q_idx >= kv_idx");
    for (int q = 0; q < 12; ++q) {
      for (int kv = 0; kv < 12; ++kv) {
        CHECK(expr::evaluate_mask(causal, args, element(q, kv)) == (q >= kv));
        CHECK(expr::evaluate_mask(window, args, element(q, kv)) == (q >= kv && q - kv < 4));
        CHECK(expr::evaluate_mask(prefix, args, element(q, kv)) == (kv < 3 || q >= kv));
      }
    }
  }
  SECTION("scores") {
    const auto alibi =
        parse_score("score + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - q_idx)");
    const auto softcap = parse_score("cap * tanh(score / cap)");
    expr::ElementIndex at{0, 2, 9, 4, 64, 64, 8};
    const float slope = std::exp2(-8.0f * 3.0f / 8.0f);
    CHECK(expr::evaluate_score(alibi, args, at, 1.25f) == Approx(1.25f + slope * -5.0f));
    CHECK(expr::evaluate_score(softcap, args, at, 100.0f) == Approx(30.0f * std::tanh(100.0f / 30.0f)));
    CHECK(expr::evaluate_score(parse_score(""), args, at, 7.5f) == 7.5f);
  }
}

TEST_CASE("mixed arithmetic promotes ints to float") {
  VariantArgs args{};
  CHECK(expr::evaluate_score(parse_score("q_idx / 2"), args, element(3, 0), 0.0f) == 1.0f);
  CHECK(expr::evaluate_score(parse_score("q_idx / 2.0"), args, element(3, 0), 0.0f) == 1.5f);
  CHECK(expr::evaluate_score(parse_score("where(q_idx > 1, 1, 0.5)"), args, element(3, 0), 0.0f) == 1.0f);
  CHECK(expr::evaluate_score(parse_score("sigmoid(0.0)"), args, element(0, 0), 0.0f) == 0.5f);
  CHECK(expr::evaluate_score(parse_score("1.0 / 0.0"), args, element(0, 0), 0.0f) ==
        std::numeric_limits<float>::infinity());
}

TEST_CASE("evaluation is safe from many threads at once") {
  const auto mask = parse_mask("q_idx >= kv_idx && q_idx - kv_idx < W");
  VariantArgs args{};
  args.scalars[0] = 16;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int q = t; q < 256; q += 4) {
        for (int kv = 0; kv < 256; ++kv) {
          if (expr::evaluate_mask(mask, args, element(q, kv)) != (q >= kv && q - kv < 16)) ++mismatches;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(mismatches == 0);
}
