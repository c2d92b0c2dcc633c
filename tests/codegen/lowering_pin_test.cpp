// The lowering of thousands of random expressions, pinned by one hash: the generated source is
// hashed into the kernel cache key, so a refactoring of the front end or the lowering must not
// change a byte of it. A deliberate change of the generated code updates the pin (the failure
// message prints the new value). Note: the pin depends on the expressions RandomExpr draws
// (libstdc++'s distributions); a change there moves it too.
#include <cstdint>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "codegen/lower_expr.hpp"
#include "expr/random_expr.hpp"

namespace {

std::uint64_t fnv1a(std::string_view text, std::uint64_t hash) {
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// Canonical form, element body and (for masks) classify body of each expression, in order.
std::uint64_t lowering_hash(attnjit::expr::ExprKind kind, unsigned seed, int count) {
  namespace expr = attnjit::expr;
  attnjit::test::RandomExpr random(seed);
  const expr::Signature signature = attnjit::test::random_signature();
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (int i = 0; i < count; ++i) {
    const std::string source = kind == expr::ExprKind::mask ? random.mask(i % 6) : random.score(i % 6);
    const expr::Expression e = expr::parse_expression(kind, source, signature);
    hash = fnv1a(e.canonical(), hash);
    hash = fnv1a(attnjit::codegen::lower_element_body(e), hash);
    if (kind == expr::ExprKind::mask) hash = fnv1a(attnjit::codegen::lower_classify_body(e), hash);
  }
  return hash;
}

// Every operator and function with each operand type it takes, and constants that need care.
constexpr const char* kEveryOperatorMasks[] = {
    "-q_idx < W && -cap < 1.5 && !(q_idx == kv_idx) && ~h != 3",
    "q_idx + kv_idx - W * P / 3 % 5 > 0 && cap + 1.5 - cap * 2.5 / cap > 0.0",
    "q_idx < kv_idx || q_idx <= W || q_idx > P || q_idx >= h || q_idx == b || q_idx != 2",
    "cap < 1.0 || cap <= 2.0 || cap > 3.0 || cap >= 4.0 || cap == 5.0 || cap != 6.0",
    "(q_idx > 1) == (kv_idx > 2) && (q_idx > 3) != (kv_idx > 4)",
    "(q_idx & W) + (q_idx | P) + (q_idx ^ h) + (q_idx << 2) + (kv_idx >> b) > 0",
    "abs(q_idx) + min(q_idx, W) + max(kv_idx, P) + clamp(h, 0, W) > int(cap)",
    "abs(cap) + min(cap, 1.0) + max(cap, 2) + clamp(cap, 0.0, 1.5) > float(q_idx)",
    "exp(cap) + exp2(cap) + log(cap) + log2(cap) + sqrt(cap) + rsqrt(cap) > 1.0",
    "tanh(cap) + sigmoid(cap) + floor(cap) + ceil(cap) + pow(cap, 2.0) > 0.0",
    "where(q_idx > W, doc[q_idx], tab[q_idx, kv_idx]) == (q_idx > 2 ? doc[kv_idx] : 7)",
    "int(q_idx > 1) + int(cap) + int(3) > 0 && float(q_idx > 2) + float(q_idx) + float(1.5) > 0.0",
    "bias[q_idx, kv_idx] > 0.0 == (tab[h, b] > 0) && doc[q_idx + 1] > -2147483648",
    "cap > 0.0 / 0.0 || cap < inf || cap > -inf || cap != -0.0 || cap < 3.4028235e38",
    "cap > 1e-45 || cap < -1.17549435e-38 || cap == 0.1 || cap == 16777217.0",
};
constexpr const char* kEveryOperatorScores[] = {
    "score * cap + bias[q_idx, kv_idx] - float(doc[kv_idx])",
    "where(q_idx >= kv_idx, score, -inf) + (h > 1 ? 0.5 : -0.5)",
    "cap * tanh(score / cap) + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - q_idx)",
    "pow(abs(score), 0.5) + sigmoid(score) + log(1.0 + exp(score)) + 0.0 / 0.0 * 0.0",
};

std::uint64_t fixed_hash(attnjit::expr::ExprKind kind) {
  namespace expr = attnjit::expr;
  const expr::Signature signature = attnjit::test::random_signature();
  std::uint64_t hash = 0xcbf29ce484222325ull;
  auto add = [&](const char* source) {
    const expr::Expression e = expr::parse_expression(kind, source, signature);
    hash = fnv1a(e.canonical(), hash);
    hash = fnv1a(attnjit::codegen::lower_element_body(e), hash);
    if (kind == expr::ExprKind::mask) hash = fnv1a(attnjit::codegen::lower_classify_body(e), hash);
  };
  if (kind == expr::ExprKind::mask) {
    for (const char* source : kEveryOperatorMasks) add(source);
  } else {
    for (const char* source : kEveryOperatorScores) add(source);
  }
  return hash;
}

}  // namespace

TEST_CASE("the lowering of every operator is pinned") {
  const std::uint64_t masks = fixed_hash(attnjit::expr::ExprKind::mask);
  const std::uint64_t scores = fixed_hash(attnjit::expr::ExprKind::score);
  INFO(fmt::format("masks 0x{:016x}ull, scores 0x{:016x}ull", masks, scores));
  CHECK(masks == 0x50a3a82fd125e493ull);
  CHECK(scores == 0xbb0d62babbf445c8ull);
}

TEST_CASE("the lowering of random masks and scores is pinned") {
  const std::uint64_t masks = lowering_hash(attnjit::expr::ExprKind::mask, 2024, 3000);
  const std::uint64_t scores = lowering_hash(attnjit::expr::ExprKind::score, 4048, 3000);
  INFO(fmt::format("masks 0x{:016x}ull, scores 0x{:016x}ull", masks, scores));
  CHECK(masks == 0x4900e4b743551ee0ull);
  CHECK(scores == 0x4dd7d9dd3b74ba48ull);
}
