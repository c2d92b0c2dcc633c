// A parsed, type-checked and constant-folded expression: the user's mask or score.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "expr/signature.hpp"

namespace attnjit::expr {

struct Node;     // expr/ast.hpp
enum class Builtin;  // expr/ast.hpp
struct Program;  // expr/program.hpp

enum class ExprKind { mask, score };

constexpr std::string_view kDefaultMask = "true";
constexpr std::string_view kDefaultScore = "score";

class Expression {
 public:
  Expression(ExprKind kind, std::string source, Signature signature, std::shared_ptr<const Node> root);

  ExprKind kind() const { return kind_; }
  const std::string& source() const { return source_; }  // as the user wrote it
  const Signature& signature() const { return signature_; }
  const Node& root() const { return *root_; }  // after constant folding
  ValueType type() const;                      // boolean for a mask, floating for a score

  bool is_constant_true() const;  // a mask that keeps everything
  bool is_identity() const;       // a score that is just `score`
  bool reads_tensors() const;     // false: "index-only", needs no precomputed block mask
  // Whether the expression reads the built-in (after constant folding: `h * 0` does not).
  bool uses(Builtin builtin) const;
  // Whether it calls a function the GPU evaluates on its special-function unit (the MUFU column
  // of expr/operators.def: exp, exp2, log, log2, sqrt, rsqrt, tanh, sigmoid, pow) on a value
  // that varies within a block (depends on score, q_idx, kv_idx or a tensor read at them), so
  // per element, row or column beside the softmax's own exponential. A call on constants,
  // parameters, b or h (ALiBi's per-head slope) is computed once per block and does not count.
  bool calls_special_function() const;
  std::string canonical() const;  // deterministic printed form of the folded AST

  // The folded AST flattened for the evaluator and the block analysis; built once here.
  const Program& program() const { return *program_; }

 private:
  ExprKind kind_;
  std::string source_;
  Signature signature_;
  std::shared_ptr<const Node> root_;
  std::shared_ptr<const Program> program_;
};

// Parses, type-checks and folds. Throws Error(Status::parse) whose message names the
// expression, the column and the reason, followed by the source line and a caret, e.g.
//   mask: col 10: unknown name 'kv_idz' (did you mean 'kv_idx'?)
//     q_idx >= kv_idz
//              ^~~~~~
// An empty source means the default (kDefaultMask / kDefaultScore).
Expression parse_expression(ExprKind kind, std::string_view source, const Signature& signature);

}  // namespace attnjit::expr
