#include "expr/typecheck.hpp"

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "expr/names.hpp"
#include "expr/operators.hpp"

namespace attnjit::expr {
namespace {

bool is_numeric(ValueType type) { return type != ValueType::boolean; }

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

constexpr std::string_view kBoolHint = "; convert with int() or float(), or choose with where()";

class Checker {
 public:
  Checker(ExprKind kind, const Signature& signature, Diagnostics& diagnostics)
      : kind_(kind), signature_(signature), diagnostics_(diagnostics) {}

  void check_root(NodePtr& root, bool check_type) {
    visit(root);
    if (root->invalid || !check_type) return;
    if (kind_ == ExprKind::mask && root->type != ValueType::boolean) {
      error(*root, root->span, fmt::format("mask must be a bool expression, got {}", to_string(root->type)));
    } else if (kind_ == ExprKind::score) {
      if (root->type == ValueType::boolean) {
        error(*root, root->span, "score must be a number, got bool");
      } else {
        promote(root);
      }
    }
  }

 private:
  void error(Node& node, Span span, std::string message) {
    node.invalid = true;
    diagnostics_.report(span, std::move(message));
  }

  // Visits every child; true when all are valid.
  bool visit_children(Node& node, std::size_t first = 0) {
    bool valid = true;
    for (std::size_t i = first; i < node.children.size(); ++i) {
      visit(node.children[i]);
      valid = valid && !node.children[i]->invalid;
    }
    if (!valid) node.invalid = true;
    return valid;
  }

  void promote(NodePtr& slot) {
    if (slot->type != ValueType::integer) return;
    NodePtr conversion = make_node(NodeKind::function, slot->span);
    conversion->op = static_cast<int>(Function::to_float);
    conversion->type = ValueType::floating;
    conversion->children.push_back(std::move(slot));
    slot = std::move(conversion);
  }

  std::vector<std::string_view> all_names(bool functions_only) const {
    std::vector<std::string_view> names;
    if (!functions_only) {
      for (const BuiltinInfo* b = builtins_begin(); b != builtins_end(); ++b) {
        if (b->builtin == Builtin::score && kind_ == ExprKind::mask) continue;
        names.push_back(b->name);
      }
      for (const ParamDecl& p : signature_.params) names.push_back(p.name);
      for (const TensorDecl& t : signature_.tensors) names.push_back(t.name);
    }
    for (const FunctionInfo& f : functions()) names.push_back(f.name);
    return names;
  }

  std::string unknown(std::string_view what, const std::string& name, bool functions_only) const {
    std::string message = fmt::format("unknown {} '{}'", what, name);
    if (auto suggestion = suggest_name(name, all_names(functions_only))) {
      message += fmt::format(" (did you mean '{}'?)", *suggestion);
    }
    return message;
  }

  // What a known, non-function name is, for messages: "parameter 'W'".
  std::string describe_name(const std::string& name) const {
    if (find_builtin(name)) return fmt::format("built-in '{}'", name);
    if (signature_.param_index(name)) return fmt::format("parameter '{}'", name);
    if (signature_.tensor_index(name)) return fmt::format("tensor '{}'", name);
    if (find_function(name)) return fmt::format("function '{}'", name);
    return {};
  }

  void visit(NodePtr& slot) {
    Node& node = *slot;
    switch (node.kind) {
      case NodeKind::error: node.invalid = true; return;
      case NodeKind::constant: return;
      case NodeKind::name: return visit_name(node);
      case NodeKind::call: return visit_call(slot);
      case NodeKind::index: return visit_index(node);
      case NodeKind::unary: return visit_unary(node);
      case NodeKind::binary: return visit_binary(node);
      case NodeKind::conditional: return visit_conditional(node);
      // Already typed (a tree checked twice).
      case NodeKind::builtin:
      case NodeKind::param:
      case NodeKind::tensor_read:
      case NodeKind::function: return;
    }
  }

  void visit_name(Node& node) {
    const std::string& name = node.text;
    if (auto builtin = find_builtin(name)) {
      if (*builtin == Builtin::score && kind_ == ExprKind::mask) {
        return error(node, node.span,
                     "'score' is only available in the score expression, not in a mask");
      }
      node.kind = NodeKind::builtin;
      node.op = static_cast<int>(*builtin);
      node.type = *builtin == Builtin::score ? ValueType::floating : ValueType::integer;
      return;
    }
    if (auto index = signature_.param_index(name)) {
      node.kind = NodeKind::param;
      node.op = *index;
      node.type = signature_.params[static_cast<std::size_t>(*index)].type;
      return;
    }
    if (auto index = signature_.tensor_index(name)) {
      const TensorDecl& tensor = signature_.tensors[static_cast<std::size_t>(*index)];
      return error(node, node.span,
                   fmt::format("tensor '{}' must be indexed, as in {}[{}]", name, name,
                               tensor.rank == 1 ? "i" : "i, j"));
    }
    if (find_function(name)) {
      return error(node, node.span, fmt::format("function '{}' must be called, as in {}(...)", name, name));
    }
    error(node, node.span, unknown("name", name, false));
  }

  void visit_call(NodePtr& slot) {
    Node& node = *slot;
    Node& callee = *node.children[0];
    const std::size_t num_args = node.children.size() - 1;
    if (callee.kind != NodeKind::name) {
      visit_children(node, 1);
      return error(node, node.op_span, "only functions can be called");
    }
    const FunctionInfo* info = find_function(callee.text);
    if (info == nullptr) {
      visit_children(node, 1);
      const std::string what = describe_name(callee.text);
      if (!what.empty()) {
        return error(node, callee.span, fmt::format("{} is not a function", what));
      }
      return error(node, callee.span, unknown("function", callee.text, true));
    }
    if (static_cast<int>(num_args) != info->arity) {
      visit_children(node, 1);
      return error(node, node.span,
                   fmt::format("function '{}' takes {}, got {}", info->name,
                               plural(static_cast<std::size_t>(info->arity), "argument", "arguments"), num_args));
    }
    node.children.erase(node.children.begin());
    if (!visit_children(node)) return;
    node.kind = NodeKind::function;
    node.op = static_cast<int>(info->function);
    type_function(slot, *info);
  }

  void type_function(NodePtr& slot, const FunctionInfo& info) {
    Node& node = *slot;
    auto& args = node.children;
    switch (info.rule) {
      case OperandRule::select:
        node.kind = NodeKind::conditional;
        node.op = 0;  // as a parsed `?:`, so that where() and its canonical form are one tree
        return type_conditional(node, "where()");
      case OperandRule::convert:
        node.type = info.function == Function::to_int ? ValueType::integer : ValueType::floating;
        return;
      case OperandRule::keeps_int:
      case OperandRule::float_math: break;
      default: throw std::logic_error("type_function: not a function rule");
    }
    bool all_int = true;
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (!is_numeric(args[i]->type)) {
        return error(node, args[i]->span,
                     fmt::format("argument {} of '{}' must be int or float, got bool{}", i + 1,
                                 info.name, kBoolHint));
      }
      all_int = all_int && args[i]->type == ValueType::integer;
    }
    if (info.rule == OperandRule::keeps_int && all_int) {
      node.type = ValueType::integer;
      return;
    }
    for (NodePtr& arg : args) promote(arg);
    node.type = ValueType::floating;
  }

  void visit_index(Node& node) {
    Node& target = *node.children[0];
    const std::size_t num_indices = node.children.size() - 1;
    if (target.kind != NodeKind::name) {
      visit_children(node, 1);
      return error(node, node.op_span, "only tensors can be indexed");
    }
    auto tensor_index = signature_.tensor_index(target.text);
    if (!tensor_index) {
      visit_children(node, 1);
      const std::string what = describe_name(target.text);
      if (!what.empty()) {
        return error(node, target.span, fmt::format("{} is not a tensor and cannot be indexed", what));
      }
      return error(node, target.span, unknown("tensor", target.text, false));
    }
    const TensorDecl& tensor = signature_.tensors[static_cast<std::size_t>(*tensor_index)];
    if (static_cast<int>(num_indices) != tensor.rank) {
      visit_children(node, 1);
      return error(node, node.span,
                   fmt::format("tensor '{}' has rank {} but is indexed with {}", tensor.name,
                               tensor.rank, plural(num_indices, "index", "indices")));
    }
    node.children.erase(node.children.begin());
    if (!visit_children(node)) return;
    for (std::size_t i = 0; i < node.children.size(); ++i) {
      if (node.children[i]->type != ValueType::integer) {
        return error(node, node.children[i]->span,
                     fmt::format("index {} of tensor '{}' must be int, got {}{}", i + 1, tensor.name,
                                 to_string(node.children[i]->type),
                                 node.children[i]->type == ValueType::floating ? " (use int())" : ""));
      }
    }
    node.kind = NodeKind::tensor_read;
    node.op = *tensor_index;
    node.type = tensor.elem == TensorElemType::int32 ? ValueType::integer : ValueType::floating;
  }

  void visit_unary(Node& node) {
    if (!visit_children(node)) return;
    const ValueType operand = node.children[0]->type;
    const UnaryInfo& info = unary_info(node.unary_op());
    if (accepts(info.rule, operand)) {
      node.type = operand;
      return;
    }
    switch (info.rule) {
      case OperandRule::arithmetic:
        return error(node, node.op_span,
                     fmt::format("operator '{}' needs an int or float operand, got bool{}",
                                 info.spelling, kBoolHint));
      case OperandRule::logical:
        return error(node, node.op_span,
                     fmt::format("operator '{}' needs a bool operand, got {} (compare explicitly, "
                                 "e.g. x == 0)",
                                 info.spelling, to_string(operand)));
      default:
        return error(node, node.op_span,
                     fmt::format("operator '{}' needs an int operand, got {}", info.spelling,
                                 to_string(operand)));
    }
  }

  // Hint for a bitwise operator given bools or floats.
  static std::string integer_operands_hint(BinaryOp op, ValueType left, ValueType right) {
    if (left == ValueType::boolean && right == ValueType::boolean) {
      if (op == BinaryOp::bit_and) return " (use '&&' for bools)";
      if (op == BinaryOp::bit_or) return " (use '||' for bools)";
      if (op == BinaryOp::bit_xor) return " (use '!=' for bools)";
    } else if (left == ValueType::floating || right == ValueType::floating) {
      return " (use int() to convert)";
    }
    return {};
  }

  void visit_binary(Node& node) {
    if (!visit_children(node)) return;
    const BinaryInfo& info = binary_info(node.binary_op());
    const ValueType left = node.children[0]->type, right = node.children[1]->type;
    const auto operands = fmt::format("got {} and {}", to_string(left), to_string(right));
    // Note: a rule admits a pair when it admits each operand and the two are both numbers or
    // both bools; numbers of different types meet as floats.
    const bool admitted = accepts(info.rule, left) && accepts(info.rule, right) &&
                          is_numeric(left) == is_numeric(right);
    if (!admitted) {
      switch (info.rule) {
        case OperandRule::arithmetic:
        case OperandRule::ordering:
          return error(node, node.op_span,
                       fmt::format("operator '{}' needs int or float operands, {}{}", info.spelling,
                                   operands, kBoolHint));
        case OperandRule::equality:
          return error(node, node.op_span,
                       fmt::format("operator '{}' cannot compare {} with {}", info.spelling,
                                   to_string(left), to_string(right)));
        case OperandRule::logical:
          return error(node, node.op_span,
                       fmt::format("operator '{}' needs bool operands, {} (compare explicitly, e.g. "
                                   "x != 0)",
                                   info.spelling, operands));
        default:
          return error(node, node.op_span,
                       fmt::format("operator '{}' needs int operands, {}{}", info.spelling, operands,
                                   integer_operands_hint(info.op, left, right)));
      }
    }
    const bool is_float = left == ValueType::floating || right == ValueType::floating;
    if (is_float) {
      promote(node.children[0]);
      promote(node.children[1]);
    }
    switch (info.rule) {
      case OperandRule::arithmetic:
        node.type = is_float ? ValueType::floating : ValueType::integer;
        return;
      case OperandRule::integer: node.type = ValueType::integer; return;
      default: node.type = ValueType::boolean; return;
    }
  }

  void visit_conditional(Node& node) {
    if (!visit_children(node)) return;
    type_conditional(node, "'?:'");
  }

  // children: condition, then, else (already checked).
  void type_conditional(Node& node, std::string_view what) {
    const ValueType condition = node.children[0]->type;
    if (condition != ValueType::boolean) {
      return error(node, node.children[0]->span,
                   fmt::format("condition of {} must be bool, got {}", what, to_string(condition)));
    }
    const ValueType a = node.children[1]->type, b = node.children[2]->type;
    if (a == b) {
      node.type = a;
      return;
    }
    if (is_numeric(a) && is_numeric(b)) {
      promote(node.children[1]);
      promote(node.children[2]);
      node.type = ValueType::floating;
      return;
    }
    error(node, node.span,
          fmt::format("branches of {} have different types: {} and {}", what, to_string(a), to_string(b)));
  }

  ExprKind kind_;
  const Signature& signature_;
  Diagnostics& diagnostics_;
};

}  // namespace

void typecheck(NodePtr& root, ExprKind kind, const Signature& signature, Diagnostics& diagnostics) {
  // Note: after a syntax error the root may be a fragment; its type says nothing.
  const bool check_type = diagnostics.empty();
  Checker(kind, signature, diagnostics).check_root(root, check_type);
}

}  // namespace attnjit::expr
