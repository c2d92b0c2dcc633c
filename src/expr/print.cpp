#include "expr/print.hpp"

#include <cmath>

#include <fmt/format.h>

#include "expr/names.hpp"
#include "expr/operators.hpp"

namespace attnjit::expr {

std::string format_float(float value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

namespace {

void print(const Node& node, const Signature& signature, std::string& out) {
  switch (node.kind) {
    case NodeKind::constant: {
      std::string text = node.type == ValueType::boolean  ? (node.int_value ? "true" : "false")
                         : node.type == ValueType::integer ? fmt::format("{}", node.int_value)
                                                           : format_float(node.float_value);
      if (text.front() == '-') text = "(" + text + ")";
      out += text;
      return;
    }
    case NodeKind::builtin: out += builtin_name(node.builtin()); return;
    case NodeKind::param: out += signature.params[static_cast<std::size_t>(node.op)].name; return;
    case NodeKind::tensor_read:
      out += signature.tensors[static_cast<std::size_t>(node.op)].name;
      out += '[';
      for (std::size_t i = 0; i < node.children.size(); ++i) {
        if (i > 0) out += ", ";
        print(node.child(i), signature, out);
      }
      out += ']';
      return;
    case NodeKind::unary:
      out += '(';
      out += unary_info(node.unary_op()).spelling;
      print(node.child(0), signature, out);
      out += ')';
      return;
    case NodeKind::binary:
      out += '(';
      print(node.child(0), signature, out);
      out += ' ';
      out += binary_info(node.binary_op()).spelling;
      out += ' ';
      print(node.child(1), signature, out);
      out += ')';
      return;
    case NodeKind::conditional:
      out += '(';
      print(node.child(0), signature, out);
      out += " ? ";
      print(node.child(1), signature, out);
      out += " : ";
      print(node.child(2), signature, out);
      out += ')';
      return;
    case NodeKind::function:
      out += function_info(node.function()).name;
      out += '(';
      for (std::size_t i = 0; i < node.children.size(); ++i) {
        if (i > 0) out += ", ";
        print(node.child(i), signature, out);
      }
      out += ')';
      return;
    case NodeKind::name:
    case NodeKind::call:
    case NodeKind::index:
    case NodeKind::error: out += "<?>"; return;
  }
}

}  // namespace

std::string print_canonical(const Node& node, const Signature& signature) {
  std::string out;
  print(node, signature, out);
  return out;
}

}  // namespace attnjit::expr
