// The expression AST. Nodes are small and own their children. The parser produces the syntactic
// kinds (name, call, index); the type checker resolves them in place into the typed kinds, so a
// checked tree holds only: constant, builtin, param, tensor_read, unary, binary, conditional,
// function. Implicit int -> float promotions are explicit `function(to_float)` nodes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "expr/signature.hpp"

namespace attnjit::expr {

// Byte offsets [begin, end) into the source.
struct Span {
  int begin = 0;
  int end = 0;
};

enum class NodeKind {
  // syntax only
  name,   // text
  call,   // children[0] is the callee, then the arguments
  index,  // children[0] is the indexed expression, then the indices
  error,  // a syntax error was reported here
  // typed
  constant,     // int_value / float_value / bool (int_value 0 or 1), per `type`
  builtin,      // op is a Builtin
  param,        // op is the parameter index
  tensor_read,  // op is the tensor index, children are the int indices
  unary,        // op is a UnaryOp
  binary,       // op is a BinaryOp
  conditional,  // children: condition, then, else
  function,     // op is a Function
};

enum class Builtin { b, h, q_idx, kv_idx, q_len, kv_len, num_heads, score };
// The operators and functions, in the order of their rows in expr/operators.def.
enum class UnaryOp {
#define ATTNJIT_UNARY(ID, ...) ID,
#include "expr/operators.def"
};
enum class BinaryOp {
#define ATTNJIT_BINARY(ID, ...) ID,
#include "expr/operators.def"
};
enum class Function {
#define ATTNJIT_FUNCTION(ID, ...) ID,
#include "expr/operators.def"
};

struct Node {
  NodeKind kind = NodeKind::error;
  ValueType type = ValueType::integer;
  bool invalid = false;  // a type error was reported in this subtree: report nothing more
  Span span;
  Span op_span;  // the operator, '?', '(' or '[' token, for messages
  int op = 0;
  std::int32_t int_value = 0;
  float float_value = 0.0f;
  std::string text;  // names as written (name nodes)
  std::vector<std::unique_ptr<Node>> children;

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Frees the subtree iteratively: a tree too deep to walk recursively is still freed safely.
  ~Node();

  const Node& child(std::size_t i) const { return *children[i]; }
  Builtin builtin() const { return static_cast<Builtin>(op); }
  UnaryOp unary_op() const { return static_cast<UnaryOp>(op); }
  BinaryOp binary_op() const { return static_cast<BinaryOp>(op); }
  Function function() const { return static_cast<Function>(op); }
  bool is_constant() const { return kind == NodeKind::constant; }
};

using NodePtr = std::unique_ptr<Node>;

NodePtr make_node(NodeKind kind, Span span);
NodePtr make_int(std::int32_t value, Span span);
NodePtr make_float(float value, Span span);
NodePtr make_bool(bool value, Span span);

// A read of a rank-1 int32 tensor at exactly the built-in `at` (doc[q_idx]): the block analysis
// bounds it by a per-tile summary of the tensor.
bool is_rank1_int_read_at(const Node& node, Builtin at);

}  // namespace attnjit::expr
