#include "expr/expression.hpp"

#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"
#include "expr/ast.hpp"
#include "expr/diagnostics.hpp"
#include "expr/fold.hpp"
#include "expr/parser.hpp"
#include "expr/print.hpp"
#include "expr/program.hpp"
#include "expr/typecheck.hpp"

namespace attnjit::expr {
namespace {

bool any_tensor_read(const Node& node) {
  if (node.kind == NodeKind::tensor_read) return true;
  for (const auto& child : node.children) {
    if (any_tensor_read(*child)) return true;
  }
  return false;
}

bool is_blank(std::string_view source) {
  return source.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

}  // namespace

Expression::Expression(ExprKind kind, std::string source, Signature signature,
                       std::shared_ptr<const Node> root)
    : kind_(kind),
      source_(std::move(source)),
      signature_(std::move(signature)),
      root_(std::move(root)),
      program_(std::make_shared<const Program>(compile_program(*root_))) {}

ValueType Expression::type() const { return root_->type; }

bool Expression::is_constant_true() const {
  return root_->is_constant() && root_->type == ValueType::boolean && root_->int_value != 0;
}

bool Expression::is_identity() const {
  return root_->kind == NodeKind::builtin && root_->builtin() == Builtin::score;
}

bool Expression::reads_tensors() const { return any_tensor_read(*root_); }

bool Expression::uses(Builtin builtin) const {
  // Note: the flattened program, not the AST: no recursion however deep the expression.
  for (const Instr& instr : program_->code) {
    if (instr.op == Opcode::load_builtin && instr.a == static_cast<std::int32_t>(builtin)) {
      return true;
    }
  }
  return false;
}

namespace {

// Whether `op` is a function whose float form runs on the special-function unit (the MUFU column
// of expr/operators.def).
bool is_special_function(Opcode op) {
  switch (op) {
#define ATTNJIT_FUNCTION(ID, SPELLING, ARITY, RULE, INT_FORM, FLOAT_FORM, IV_FORM, SCORE_FORM, \
                         MUFU)                                                                   \
  case Opcode::ID: return MUFU;
#include "expr/operators.def"
    default: return false;
  }
}

}  // namespace

bool Expression::calls_special_function() const {
  // Note: runs the flattened program on "varies within a block" flags, so no recursion.
  std::vector<bool> varies;
  for (const Instr& instr : program_->code) {
    bool operand_varies = false;
    for (int i = 0; i < pops(instr.op); ++i) {
      operand_varies = operand_varies || varies.back();
      varies.pop_back();
    }
    if (operand_varies && is_special_function(instr.op)) return true;
    bool result_varies = operand_varies;
    if (instr.op == Opcode::load_builtin) {
      const auto builtin = static_cast<Builtin>(instr.a);
      result_varies =
          builtin == Builtin::score || builtin == Builtin::q_idx || builtin == Builtin::kv_idx;
    } else if (instr.op == Opcode::read_at_q || instr.op == Opcode::read_at_kv) {
      result_varies = true;
    }
    varies.push_back(result_varies);
  }
  return false;
}

std::string Expression::canonical() const { return print_canonical(*root_, signature_); }

Expression parse_expression(ExprKind kind, std::string_view source, const Signature& signature) {
  validate_signature(signature);
  const std::string_view what = kind == ExprKind::mask ? "mask" : "score";
  if (is_blank(source)) source = kind == ExprKind::mask ? kDefaultMask : kDefaultScore;
  if (source.size() > static_cast<std::size_t>(kMaxSourceLength)) {
    throw_error(Status::parse, "{}: col {}: expression is too long ({} characters, at most {})", what,
                kMaxSourceLength + 1, source.size(), kMaxSourceLength);
  }
  Diagnostics diagnostics;
  NodePtr root = parse(source, diagnostics);
  typecheck(root, kind, signature, diagnostics);
  if (!diagnostics.empty()) {
    throw Error(Status::parse, format_diagnostics(what, source, diagnostics.list()));
  }
  fold_constants(root);
  return Expression(kind, std::string(source), signature, std::shared_ptr<const Node>(std::move(root)));
}

}  // namespace attnjit::expr
