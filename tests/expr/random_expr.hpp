// Random well-typed expressions over a fixed signature, for property tests (block analysis
// soundness, NVRTC compilation of lowered code).
#pragma once

#include <random>
#include <string>

#include <fmt/format.h>

#include "expr/signature.hpp"

namespace attnjit::test {

// W, P: int; cap: float; doc: int32[1]; tab: int32[2]; bias: float32[2].
inline expr::Signature random_signature() {
  expr::Signature signature;
  signature.params = {{"W", expr::ValueType::integer},
                      {"P", expr::ValueType::integer},
                      {"cap", expr::ValueType::floating}};
  signature.tensors = {{"doc", expr::TensorElemType::int32, 1},
                       {"tab", expr::TensorElemType::int32, 2},
                       {"bias", expr::TensorElemType::float32, 2}};
  return signature;
}

class RandomExpr {
 public:
  explicit RandomExpr(unsigned seed) : rng_(seed) {}

  std::string mask(int depth = 4) {
    allow_score_ = false;
    return boolean(depth);
  }
  std::string score(int depth = 4) {
    allow_score_ = true;
    return floating(depth);
  }

  std::string boolean(int depth) {
    if (depth <= 0) return compare(0);
    switch (pick(10)) {
      case 0: return fmt::format("({} && {})", boolean(depth - 1), boolean(depth - 1));
      case 1: return fmt::format("({} || {})", boolean(depth - 1), boolean(depth - 1));
      case 2: return fmt::format("!{}", boolean(depth - 1));
      case 3: return fmt::format("({} ? {} : {})", boolean(depth - 1), boolean(depth - 1), boolean(depth - 1));
      case 4: return fmt::format("({} == {})", boolean(depth - 1), boolean(depth - 1));
      case 5: return pick(2) ? "true" : "false";
      case 6: return fmt::format("({} {} {})", floating(depth - 1), cmp_op(), floating(depth - 1));
      default: return compare(depth - 1);
    }
  }

  std::string integer(int depth) {
    if (depth <= 0 || pick(4) == 0) return int_leaf();
    static constexpr const char* kOps[] = {"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"};
    switch (pick(12)) {
      case 0: return fmt::format("-{}", integer(depth - 1));
      case 1: return fmt::format("abs({})", integer(depth - 1));
      case 2: return fmt::format("{}({}, {})", pick(2) ? "min" : "max", integer(depth - 1), integer(depth - 1));
      case 3:
        return fmt::format("clamp({}, {}, {})", integer(depth - 1), integer(depth - 1), integer(depth - 1));
      case 4: return fmt::format("({} ? {} : {})", boolean(depth - 1), integer(depth - 1), integer(depth - 1));
      case 5: return fmt::format("int({})", floating(depth - 1));
      case 6: return fmt::format("doc[{}]", integer(depth - 1));
      case 7: return fmt::format("tab[{}, {}]", integer(depth - 1), integer(depth - 1));
      case 8: return fmt::format("~{}", integer(depth - 1));
      default:
        return fmt::format("({} {} {})", integer(depth - 1), kOps[pick(10)], integer(depth - 1));
    }
  }

  std::string floating(int depth) {
    if (depth <= 0 || pick(4) == 0) return float_leaf();
    static constexpr const char* kOps[] = {"+", "-", "*", "/"};
    switch (pick(10)) {
      case 0: return fmt::format("float({})", integer(depth - 1));
      case 1: return fmt::format("abs({})", floating(depth - 1));
      case 2: return fmt::format("{}({}, {})", pick(2) ? "min" : "max", floating(depth - 1), integer(depth - 1));
      case 3: return fmt::format("bias[{}, {}]", integer(depth - 1), integer(depth - 1));
      case 4: {
        static constexpr const char* kFns[] = {"exp", "exp2", "log", "sqrt", "tanh", "sigmoid", "floor", "ceil", "rsqrt", "log2"};
        return fmt::format("{}({})", kFns[pick(10)], floating(depth - 1));
      }
      case 5: return fmt::format("where({}, {}, {})", boolean(depth - 1), floating(depth - 1), integer(depth - 1));
      default: return fmt::format("({} {} {})", floating(depth - 1), kOps[pick(4)], floating(depth - 1));
    }
  }

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

 private:
  std::string compare(int depth) {
    return fmt::format("({} {} {})", integer(depth), cmp_op(), integer(depth));
  }
  const char* cmp_op() {
    static constexpr const char* kOps[] = {"<", "<=", ">", ">=", "==", "!="};
    return kOps[pick(6)];
  }
  std::string int_leaf() {
    static constexpr const char* kLeaves[] = {"q_idx", "kv_idx", "q_idx", "kv_idx", "b", "h",
                                              "q_len", "kv_len", "num_heads", "W", "P", "doc[q_idx]",
                                              "doc[kv_idx]"};
    if (pick(4) == 0) return std::to_string(pick(40) - 8);
    return kLeaves[pick(13)];
  }
  std::string float_leaf() {
    switch (pick(5)) {
      case 0: return "cap";
      case 1: return fmt::format("{}.5", pick(20) - 10);
      case 2: return allow_score_ ? "score" : "cap";
      default: return fmt::format("float({})", int_leaf());
    }
  }

  std::mt19937 rng_;
  bool allow_score_ = false;
};

}  // namespace attnjit::test
