#include "expr/ast.hpp"

namespace attnjit::expr {

Node::~Node() {
  std::vector<std::unique_ptr<Node>> pending = std::move(children);
  while (!pending.empty()) {
    std::unique_ptr<Node> node = std::move(pending.back());
    pending.pop_back();
    if (node == nullptr) continue;  // a child moved out, as folding does
    for (auto& child : node->children) pending.push_back(std::move(child));
    node->children.clear();
  }  // each node is deleted here, childless
}

NodePtr make_node(NodeKind kind, Span span) {
  auto node = std::make_unique<Node>();
  node->kind = kind;
  node->span = span;
  return node;
}

NodePtr make_int(std::int32_t value, Span span) {
  NodePtr node = make_node(NodeKind::constant, span);
  node->type = ValueType::integer;
  node->int_value = value;
  return node;
}

NodePtr make_float(float value, Span span) {
  NodePtr node = make_node(NodeKind::constant, span);
  node->type = ValueType::floating;
  node->float_value = value;
  return node;
}

NodePtr make_bool(bool value, Span span) {
  NodePtr node = make_node(NodeKind::constant, span);
  node->type = ValueType::boolean;
  node->int_value = value ? 1 : 0;
  return node;
}

bool is_rank1_int_read_at(const Node& node, Builtin at) {
  return node.kind == NodeKind::tensor_read && node.type == ValueType::integer &&
         node.children.size() == 1 && node.child(0).kind == NodeKind::builtin &&
         node.child(0).builtin() == at;
}

}  // namespace attnjit::expr
