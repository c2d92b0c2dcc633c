#include "expr/fold.hpp"

#include "expr/interpret.hpp"
#include "expr/program.hpp"

namespace attnjit::expr {
namespace {

bool is_bool_constant(const Node& node, bool value) {
  return node.is_constant() && node.type == ValueType::boolean && (node.int_value != 0) == value;
}

// Replaces the node by one of its children, keeping the outer span.
void replace_by_child(NodePtr& slot, std::size_t i) {
  NodePtr child = std::move(slot->children[i]);
  slot = std::move(child);
}

}  // namespace

void fold_constants(NodePtr& slot) {
  for (NodePtr& child : slot->children) fold_constants(child);
  Node& node = *slot;
  switch (node.kind) {
    case NodeKind::unary:
    case NodeKind::binary:
    case NodeKind::conditional:
    case NodeKind::function: break;
    default: return;
  }
  bool all_constant = true;
  for (const NodePtr& child : node.children) all_constant = all_constant && child->is_constant();
  if (all_constant) {
    const Value value = run_program(compile_program(node), nullptr, Frame{});
    NodePtr constant = node.type == ValueType::floating ? make_float(value.f, node.span)
                       : node.type == ValueType::boolean ? make_bool(value.i != 0, node.span)
                                                         : make_int(value.i, node.span);
    slot = std::move(constant);
    return;
  }
  if (node.kind == NodeKind::conditional && node.child(0).is_constant()) {
    return replace_by_child(slot, node.child(0).int_value != 0 ? 1 : 2);
  }
  if (node.kind == NodeKind::binary) {
    const BinaryOp op = node.binary_op();
    if (op == BinaryOp::logical_and || op == BinaryOp::logical_or) {
      const bool absorbing = op == BinaryOp::logical_or;  // x || true == true
      for (std::size_t i = 0; i < 2; ++i) {
        if (is_bool_constant(node.child(i), absorbing)) return replace_by_child(slot, i);
        if (is_bool_constant(node.child(i), !absorbing)) return replace_by_child(slot, 1 - i);
      }
    }
  }
  if (node.kind == NodeKind::function) {
    const Function f = node.function();
    if ((f == Function::to_int && node.child(0).type == ValueType::integer) ||
        (f == Function::to_float && node.child(0).type == ValueType::floating)) {
      return replace_by_child(slot, 0);
    }
  }
}

}  // namespace attnjit::expr
