#include "codegen/lower_expr.hpp"

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "expr/ast.hpp"
#include "expr/names.hpp"
#include "expr/operators.hpp"
#include "expr/print.hpp"

namespace attnjit::codegen {
namespace {

using expr::Builtin;
using expr::Form;
using expr::Node;
using expr::NodeKind;
using expr::ValueType;

constexpr std::string_view kOps = "attnjit::ops::";

// What the body reads, so that it declares only those locals (in declaration order).
struct Uses {
  std::set<int> builtins, params, tensors;
};

void collect(const Node& node, Uses& uses, const HoistedNames* hoisted = nullptr) {
  if (hoisted != nullptr && hoisted->count(&node) != 0) return;  // read through its hoisted value
  if (node.kind == NodeKind::builtin) uses.builtins.insert(node.op);
  if (node.kind == NodeKind::param) uses.params.insert(node.op);
  if (node.kind == NodeKind::tensor_read) uses.tensors.insert(node.op);
  for (const auto& child : node.children) collect(*child, uses, hoisted);
}

std::string int_literal(int value) {
  if (value == -2147483647 - 1) return "(-2147483647 - 1)";
  return value < 0 ? fmt::format("({})", value) : fmt::format("{}", value);
}

std::string float_literal(float value) {
  const std::string text = expr::format_float(value);
  if (text == "nan") return fmt::format("{}nan_f()", kOps);
  if (text == "inf") return fmt::format("{}inf_f()", kOps);
  if (text == "-inf") return fmt::format("(-{}inf_f())", kOps);
  return text.front() == '-' ? fmt::format("({}f)", text) : text + "f";
}

std::string strip_parens(std::string text) {
  // Drops one outer pair of parentheses when it encloses the whole expression.
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') return text;
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')') --depth;
    if (depth == 0 && i + 1 < text.size()) return text;
  }
  return text.substr(1, text.size() - 2);
}

// Arguments need no enclosing parentheses of their own.
std::string call(std::string_view name, const std::string& a) {
  return fmt::format("{}{}({})", kOps, name, strip_parens(a));
}
std::string call(std::string_view name, const std::string& a, const std::string& b) {
  return fmt::format("{}{}({}, {})", kOps, name, strip_parens(a), strip_parens(b));
}
std::string call(std::string_view name, const std::string& a, const std::string& b, const std::string& c) {
  return fmt::format("{}{}({}, {}, {})", kOps, name, strip_parens(a), strip_parens(b), strip_parens(c));
}

// An operation in the form the table gives it; `spelling` is the C operator of infix forms.
std::string apply_form(const Form& form, std::string_view spelling, const std::vector<std::string>& args) {
  switch (form.kind) {
    case Form::Kind::call:
      if (args.size() == 1) return call(form.name, args[0]);
      if (args.size() == 2) return call(form.name, args[0], args[1]);
      return call(form.name, args[0], args[1], args[2]);
    case Form::Kind::infix:
      if (args.size() == 1) return fmt::format("({}{})", spelling, args[0]);
      return fmt::format("({} {} {})", args[0], spelling, args[1]);
    case Form::Kind::select:
    case Form::Kind::none: break;
  }
  throw std::logic_error("apply_form: no form for these operands");
}

class Lowering {
 public:
  explicit Lowering(const expr::Signature& signature, ElementOptions options = {})
      : signature_(signature), options_(options) {}

  // Scalar C++ for one element.
  std::string element(const Node& node) {
    if (options_.hoisted != nullptr) {
      const auto found = options_.hoisted->find(&node);
      if (found != options_.hoisted->end()) return found->second;
    }
    switch (node.kind) {
      case NodeKind::constant:
        if (node.type == ValueType::boolean) return node.int_value ? "true" : "false";
        if (node.type == ValueType::integer) return int_literal(node.int_value);
        return float_literal(node.float_value);
      case NodeKind::builtin: return std::string(expr::builtin_name(node.builtin()));
      case NodeKind::param: return param_name(node.op);
      case NodeKind::tensor_read: {
        const std::string& name = tensor_name(node.op);
        const std::string_view read = node.type == ValueType::integer ? "read_i32" : "read_f32";
        if (node.children.size() == 1) return call(read, name, element(node.child(0)));
        return call(read, name, element(node.child(0)), element(node.child(1)));
      }
      case NodeKind::unary: {
        const auto& info = expr::unary_info(node.unary_op());
        return apply_form(expr::element_form(info, node.child(0).type), info.spelling,
                          {element(node.child(0))});
      }
      case NodeKind::binary: {
        const auto& info = expr::binary_info(node.binary_op());
        const ValueType operand = node.child(0).type;
        return apply_form(options_.fast_math ? expr::score_element_form(info, operand)
                                             : expr::element_form(info, operand),
                          info.spelling, {element(node.child(0)), element(node.child(1))});
      }
      case NodeKind::conditional:
        return fmt::format("({} ? {} : {})", element(node.child(0)), element(node.child(1)),
                           element(node.child(2)));
      case NodeKind::function: return element_function(node);
      default: break;
    }
    return "/* unreachable */ 0";
  }

  // Interval C++ for a tile.
  std::string interval(const Node& node) {
    switch (node.kind) {
      case NodeKind::constant:
        if (node.type == ValueType::boolean) return call("tri", node.int_value ? "true" : "false");
        if (node.type == ValueType::integer) return call("iv_int", int_literal(node.int_value));
        return call("iv_float", float_literal(node.float_value));
      case NodeKind::builtin: return std::string(expr::builtin_name(node.builtin()));
      case NodeKind::param: return param_name(node.op);
      case NodeKind::tensor_read: {
        const std::string& name = tensor_name(node.op);
        if (expr::is_rank1_int_read_at(node, Builtin::q_idx)) {
          return call("iv_read_summary", name, name + ".q_summary", "q_idx");
        }
        if (expr::is_rank1_int_read_at(node, Builtin::kv_idx)) {
          return call("iv_read_summary", name, name + ".kv_summary", "kv_idx");
        }
        const std::string_view read =
            node.type == ValueType::integer ? "iv_read_i32" : "iv_read_f32";
        if (node.children.size() == 1) return call(read, name, interval(node.child(0)));
        return call(read, name, interval(node.child(0)), interval(node.child(1)));
      }
      case NodeKind::unary: {
        const auto& info = expr::unary_info(node.unary_op());
        return apply_form(expr::interval_form(info, node.child(0).type), info.spelling,
                          {interval(node.child(0))});
      }
      case NodeKind::binary: {
        const auto& info = expr::binary_info(node.binary_op());
        return apply_form(expr::interval_form(info, node.child(0).type), info.spelling,
                          {interval(node.child(0)), interval(node.child(1))});
      }
      case NodeKind::conditional:
        return apply_form(expr::function_info(expr::Function::where).interval_form, {},
                          {interval(node.child(0)), interval(node.child(1)), interval(node.child(2))});
      case NodeKind::function: return interval_function(node);
      default: break;
    }
    return "/* unreachable */ attnjit::ops::tri_unknown()";
  }

  const std::string& param_name(int i) const { return signature_.params[static_cast<std::size_t>(i)].name; }
  const std::string& tensor_name(int i) const {
    return signature_.tensors[static_cast<std::size_t>(i)].name;
  }

 private:
  std::string element_function(const Node& node) {
    const auto& info = expr::function_info(node.function());
    const ValueType operand = node.child(0).type;
    std::vector<std::string> args;
    for (const auto& child : node.children) args.push_back(element(*child));
    if (info.rule == expr::OperandRule::convert) {
      const expr::ConversionInfo* conversion = expr::find_conversion(operand, node.type);
      if (conversion == nullptr) return args[0];
      if (conversion->element_form.kind == Form::Kind::select) {
        const bool to_int = node.type == ValueType::integer;
        return fmt::format("({} ? {} : {})", args[0], to_int ? "1" : "1.0f", to_int ? "0" : "0.0f");
      }
      return apply_form(conversion->element_form, {}, args);
    }
    if (operand == ValueType::integer) return apply_form(info.int_form, {}, args);
    return apply_form(options_.fast_math ? info.score_form : info.float_form, {}, args);
  }

  std::string interval_function(const Node& node) {
    const auto& info = expr::function_info(node.function());
    const ValueType operand = node.child(0).type;
    std::vector<std::string> args;
    for (const auto& child : node.children) args.push_back(interval(*child));
    if (info.rule == expr::OperandRule::convert) {
      const expr::ConversionInfo* conversion = expr::find_conversion(operand, node.type);
      if (conversion == nullptr) return args[0];
      return apply_form(conversion->interval_form, {}, args);
    }
    return apply_form(info.interval_form, {}, args);
  }

  const expr::Signature& signature_;
  ElementOptions options_;
};

void declare_inputs(const expr::Signature& signature, const Uses& uses, bool intervals, std::string& out) {
  for (int i : uses.params) {
    const expr::ParamDecl& param = signature.params[static_cast<std::size_t>(i)];
    const std::string raw = fmt::format("args.scalars[{}]", i);
    if (param.type == ValueType::floating) {
      const std::string value = fmt::format("attnjit::ops::bits_to_float({})", raw);
      out += intervals ? fmt::format("  const attnjit::ops::FloatIv {} = attnjit::ops::iv_float({});\n",
                                     param.name, value)
                       : fmt::format("  const float {} = {};\n", param.name, value);
    } else {
      out += intervals ? fmt::format("  const attnjit::ops::IntIv {} = attnjit::ops::iv_int({});\n",
                                     param.name, raw)
                       : fmt::format("  const int {} = {};\n", param.name, raw);
    }
  }
  for (int i : uses.tensors) {
    out += fmt::format("  const attnjit::TensorArg& {} = args.tensors[{}];\n",
                       signature.tensors[static_cast<std::size_t>(i)].name, i);
  }
}

// Reads of doc[q_idx] in the classify body use the q_idx interval even when q_idx itself is
// not otherwise read.
void collect_summary_axes(const Node& node, Uses& uses) {
  if (expr::is_rank1_int_read_at(node, Builtin::q_idx)) {
    uses.builtins.insert(static_cast<int>(Builtin::q_idx));
  }
  if (expr::is_rank1_int_read_at(node, Builtin::kv_idx)) {
    uses.builtins.insert(static_cast<int>(Builtin::kv_idx));
  }
  for (const auto& child : node.children) collect_summary_axes(*child, uses);
}

// A summarised read (doc[q_idx]) needs its axis; any other read its indices' intervals, which
// decide whether it reads one element (ops::iv_read_i32).
void collect_interval_uses(const Node& node, Uses& uses) {
  if (node.kind == NodeKind::tensor_read) {
    uses.tensors.insert(node.op);
    if (expr::is_rank1_int_read_at(node, Builtin::q_idx) ||
        expr::is_rank1_int_read_at(node, Builtin::kv_idx)) {
      collect_summary_axes(node, uses);
      return;
    }
  }
  if (node.kind == NodeKind::builtin) uses.builtins.insert(node.op);
  if (node.kind == NodeKind::param) uses.params.insert(node.op);
  for (const auto& child : node.children) collect_interval_uses(*child, uses);
}

std::string builtin_interval(Builtin builtin) {
  switch (builtin) {
    case Builtin::b: return "attnjit::ops::iv_int(tile.b)";
    case Builtin::h: return "attnjit::ops::iv_int(tile.h)";
    case Builtin::q_idx: return "attnjit::ops::iv_span(tile.q_begin, tile.q_end)";
    case Builtin::kv_idx: return "attnjit::ops::iv_span(tile.kv_begin, tile.kv_end)";
    case Builtin::q_len: return "attnjit::ops::iv_int(tile.q_len)";
    case Builtin::kv_len: return "attnjit::ops::iv_int(tile.kv_len)";
    case Builtin::num_heads: return "attnjit::ops::iv_int(tile.num_heads)";
    case Builtin::score: break;
  }
  return "attnjit::ops::iv_int_full()";
}

}  // namespace

std::string lower_element(const expr::Node& node, const expr::Signature& signature,
                          const ElementOptions& options) {
  return strip_parens(Lowering(signature, options).element(node));
}

std::string declare_element_inputs(const expr::Signature& signature,
                                   const std::vector<const expr::Node*>& roots,
                                   const HoistedNames* hoisted) {
  Uses uses;
  for (const expr::Node* root : roots) {
    // Note: the root itself is read whole even when it is hoisted (it is what is being computed).
    HoistedNames descendants = hoisted != nullptr ? *hoisted : HoistedNames{};
    descendants.erase(root);
    collect(*root, uses, &descendants);
  }
  std::string out;
  declare_inputs(signature, uses, false, out);
  return out;
}

std::string lower_element_body(const expr::Expression& expression, const ElementOptions& options) {
  const Node& root = expression.root();
  std::vector<const Node*> roots;
  if (options.hoisted == nullptr || options.hoisted->count(&root) == 0) roots.push_back(&root);
  std::string out = declare_element_inputs(expression.signature(), roots, options.hoisted);
  out += fmt::format("  return {};\n", lower_element(root, expression.signature(), options));
  return out;
}

std::string lower_classify_body(const expr::Expression& mask) {
  const Node& root = mask.root();
  std::string out =
      "  if (tile.q_end <= tile.q_begin || tile.kv_end <= tile.kv_begin) return attnjit::kTileEmpty;\n";
  Uses uses;
  collect_interval_uses(root, uses);
  for (int b : uses.builtins) {
    const auto builtin = static_cast<Builtin>(b);
    out += fmt::format("  const attnjit::ops::IntIv {} = {};\n", expr::builtin_name(builtin),
                       builtin_interval(builtin));
  }
  declare_inputs(mask.signature(), uses, true, out);
  Lowering lowering(mask.signature());
  out += fmt::format("  return attnjit::ops::tile_class({});\n", lowering.interval(root));
  return out;
}

}  // namespace attnjit::codegen
