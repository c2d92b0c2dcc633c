// Throws ~20k random and mutated strings at the front end: the parser must only ever throw
// Error(Status::parse) and always terminate quickly, and whatever parses goes on through
// lowering and kernel source generation (not NVRTC), on a 512 KiB stack. Runs in every build
// (the libFuzzer target in this folder needs clang).
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "codegen/variant_source.hpp"
#include "common/error.hpp"
#include "expr/expression.hpp"
#include "expr/random_expr.hpp"
#include "support/small_stack.hpp"

using namespace attnjit;

namespace {

// Parses and, when that succeeds, lowers and generates the kernel source, on a thread with a
// 512 KiB stack; true when it parsed. Any exception other than a parse Error fails the test.
bool try_parse(expr::ExprKind kind, const std::string& source, const expr::Signature& signature) {
  static const auto default_mask = expr::parse_expression(expr::ExprKind::mask, "", signature);
  static const auto default_score = expr::parse_expression(expr::ExprKind::score, "", signature);
  bool parsed = false;
  std::string failure;
  test::run_on_stack(512 * 1024, [&] {
    try {
      const auto expression = expr::parse_expression(kind, source, signature);
      parsed = true;
      (void)expression.canonical();
      const bool is_mask = kind == expr::ExprKind::mask;
      const auto kernel = codegen::generate_kernel_source(is_mask ? expression : default_mask,
                                                          is_mask ? default_score : expression,
                                                          DType::fp16, 128, 90);
      if (kernel.source.empty()) failure = "empty kernel source";
    } catch (const Error& error) {
      if (parsed || error.status() != Status::parse) {
        failure = fmt::format("unexpected {} error: {}", status_name(error.status()), error.what());
      } else if (std::string(error.what()).empty()) {
        failure = "empty message";
      }
    }
  });
  if (!failure.empty()) FAIL(failure << " for: " << source);
  return parsed;
}

}  // namespace

TEST_CASE("random and mutated strings never crash the parser") {
  const expr::Signature signature = test::random_signature();
  test::RandomExpr generator(99);
  std::mt19937 rng(2024);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::vector<std::string> fragments = {
      "q_idx", "kv_idx", "doc[", "]", "(", ")", ",", "?", ":", "&&", "||", "!", "-", "+", "*", "/",
      "%", "<<", ">>", "==", "=", "<", ">=", "1e", "1e-3", ".5", "3.", "2147483648", "-2147483648",
      "inf", "true", "min(", "clamp(", "where(", "int(", "float(", "score", "bias[", "tab[", "W",
      "cap", "\xff", "\t", " ", "$", "~", "^", "&", "|", "#"};
  int parsed = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20000; ++i) {
    std::string source;
    switch (i % 4) {
      case 0:  // random bytes
        for (int n = uniform(0, 40); n > 0; --n) source += static_cast<char>(uniform(0, 255));
        break;
      case 1:  // random fragments
        for (int n = uniform(1, 30); n > 0; --n) source += fragments[static_cast<std::size_t>(uniform(0, 49))];
        break;
      default: {  // a valid expression, mutated
        source = i % 8 < 4 ? generator.mask(uniform(1, 5)) : generator.score(uniform(1, 5));
        for (int n = uniform(1, 4); n > 0 && !source.empty(); --n) {
          const auto at = static_cast<std::size_t>(uniform(0, static_cast<int>(source.size()) - 1));
          switch (uniform(0, 3)) {
            case 0: source.erase(at, 1); break;
            case 1: source.insert(at, fragments[static_cast<std::size_t>(uniform(0, 49))]); break;
            case 2: source[at] = static_cast<char>(uniform(32, 126)); break;
            default: source = source.substr(0, at) + source.substr(at) + source.substr(at); break;
          }
        }
      }
    }
    parsed += try_parse(i % 2 ? expr::ExprKind::mask : expr::ExprKind::score, source, signature);
  }
  CHECK(parsed > 100);  // some mutations stay valid, so the later stages run too
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(60));
}

TEST_CASE("pathological inputs stay fast and bounded") {
  const expr::Signature signature = test::random_signature();
  const std::vector<std::string> inputs = {
      std::string(4096, '('),
      std::string(4096, '-') ,
      std::string(4000, '!') + "true",
      [] { std::string s = "q_idx"; while (s.size() < 4090) s += "+1"; return s + ">0"; }(),
      [] { std::string s = "q_idx"; while (s.size() < 4080) s += "<q_idx?1:"; return s; }(),
      [] { std::string s; while (s.size() < 4090) s += "min(q_idx,"; return s; }(),
      [] { std::string s; while (s.size() < 4090) s += "doc["; return s; }(),
      std::string(4096, 'x'),
      std::string(4096, '9'),
      std::string(5000, ' ') + "q_idx > 0",
      [] { std::string s; while (s.size() < 4000) s += "kv_idz + "; return s + "1 > 0"; }(),
  };
  for (const std::string& source : inputs) {
    const auto start = std::chrono::steady_clock::now();
    try_parse(expr::ExprKind::mask, source, signature);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  }
}
