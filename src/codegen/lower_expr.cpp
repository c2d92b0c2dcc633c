#include "codegen/lower_expr.hpp"

#include <set>
#include <string>

#include <fmt/format.h>

#include "expr/ast.hpp"
#include "expr/names.hpp"
#include "expr/print.hpp"

namespace attnjit::codegen {
namespace {

using expr::BinaryOp;
using expr::Builtin;
using expr::Function;
using expr::Node;
using expr::NodeKind;
using expr::UnaryOp;
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

std::string_view float_function(Function f, bool fast) {
  switch (f) {
    case Function::exp: return fast ? "fast_exp_f" : "exp_f";
    case Function::exp2: return fast ? "fast_exp2_f" : "exp2_f";
    case Function::log: return fast ? "fast_log_f" : "log_f";
    case Function::log2: return fast ? "fast_log2_f" : "log2_f";
    case Function::sqrt: return "sqrt_f";
    case Function::rsqrt: return "rsqrt_f";
    case Function::tanh: return fast ? "fast_tanh_f" : "tanh_f";
    case Function::sigmoid: return fast ? "fast_sigmoid_f" : "sigmoid_f";
    case Function::floor: return "floor_f";
    case Function::ceil: return "ceil_f";
    default: return "";
  }
}

bool is_rank1_int_read_at(const Node& node, Builtin at) {
  return node.kind == NodeKind::tensor_read && node.type == ValueType::integer &&
         node.children.size() == 1 && node.child(0).kind == NodeKind::builtin &&
         node.child(0).builtin() == at;
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
        const std::string operand = element(node.child(0));
        switch (node.unary_op()) {
          case UnaryOp::neg:
            return node.type == ValueType::integer ? call("neg_i", operand) : "(-" + operand + ")";
          case UnaryOp::logical_not: return "(!" + operand + ")";
          case UnaryOp::bit_not: return "(~" + operand + ")";
        }
        break;
      }
      case NodeKind::binary: {
        const std::string a = element(node.child(0)), b = element(node.child(1));
        const bool is_int = node.child(0).type == ValueType::integer;
        switch (node.binary_op()) {
          case BinaryOp::add:
            if (is_int) return call("add_i", a, b);
            break;
          case BinaryOp::sub:
            if (is_int) return call("sub_i", a, b);
            break;
          case BinaryOp::mul:
            if (is_int) return call("mul_i", a, b);
            break;
          case BinaryOp::div:
            if (is_int) return call("div_i", a, b);
            if (options_.fast_math) return call("fast_div_f", a, b);
            break;
          case BinaryOp::mod: return call("mod_i", a, b);
          case BinaryOp::shl: return call("shl_i", a, b);
          case BinaryOp::shr: return call("shr_i", a, b);
          default: break;
        }
        return fmt::format("({} {} {})", a, expr::binary_spelling(node.binary_op()), b);
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
        if (is_rank1_int_read_at(node, Builtin::q_idx)) {
          return call("iv_read_summary", name, name + ".q_summary", "q_idx");
        }
        if (is_rank1_int_read_at(node, Builtin::kv_idx)) {
          return call("iv_read_summary", name, name + ".kv_summary", "kv_idx");
        }
        return fmt::format("{}{}()", kOps,
                           node.type == ValueType::integer ? "iv_read_i32_any" : "iv_read_f32_any");
      }
      case NodeKind::unary: {
        const std::string operand = interval(node.child(0));
        switch (node.unary_op()) {
          case UnaryOp::neg: return call("iv_neg", operand);
          case UnaryOp::logical_not: return call("tri_not", operand);
          case UnaryOp::bit_not: return call("iv_bitnot", operand);
        }
        break;
      }
      case NodeKind::binary: {
        const std::string a = interval(node.child(0)), b = interval(node.child(1));
        const bool is_bool = node.child(0).type == ValueType::boolean;
        switch (node.binary_op()) {
          case BinaryOp::add: return call("iv_add", a, b);
          case BinaryOp::sub: return call("iv_sub", a, b);
          case BinaryOp::mul: return call("iv_mul", a, b);
          case BinaryOp::div: return call("iv_div", a, b);
          case BinaryOp::mod: return call("iv_mod", a, b);
          case BinaryOp::lt: return call("iv_lt", a, b);
          case BinaryOp::le: return call("iv_le", a, b);
          case BinaryOp::gt: return call("iv_gt", a, b);
          case BinaryOp::ge: return call("iv_ge", a, b);
          case BinaryOp::eq: return call(is_bool ? "tri_eq" : "iv_eq", a, b);
          case BinaryOp::ne: return call(is_bool ? "tri_ne" : "iv_ne", a, b);
          case BinaryOp::logical_and: return call("tri_and", a, b);
          case BinaryOp::logical_or: return call("tri_or", a, b);
          case BinaryOp::bit_and: return call("iv_bitand", a, b);
          case BinaryOp::bit_or: return call("iv_bitor", a, b);
          case BinaryOp::bit_xor: return call("iv_bitxor", a, b);
          case BinaryOp::shl: return call("iv_shl", a, b);
          case BinaryOp::shr: return call("iv_shr", a, b);
        }
        break;
      }
      case NodeKind::conditional:
        return call("iv_select", interval(node.child(0)), interval(node.child(1)), interval(node.child(2)));
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
    const Function f = node.function();
    const ValueType operand = node.child(0).type;
    std::vector<std::string> args;
    for (const auto& child : node.children) args.push_back(element(*child));
    const bool is_float = node.type == ValueType::floating;
    switch (f) {
      case Function::abs: return call(is_float ? "abs_f" : "abs_i", args[0]);
      case Function::min: return call(is_float ? "min_f" : "min_i", args[0], args[1]);
      case Function::max: return call(is_float ? "max_f" : "max_i", args[0], args[1]);
      case Function::clamp: return call(is_float ? "clamp_f" : "clamp_i", args[0], args[1], args[2]);
      case Function::pow: return call("pow_f", args[0], args[1]);
      case Function::where: return fmt::format("({} ? {} : {})", args[0], args[1], args[2]);
      case Function::to_int:
        if (operand == ValueType::floating) return call("f2i", args[0]);
        if (operand == ValueType::boolean) return fmt::format("({} ? 1 : 0)", args[0]);
        return args[0];
      case Function::to_float:
        if (operand == ValueType::integer) return call("i2f", args[0]);
        if (operand == ValueType::boolean) return fmt::format("({} ? 1.0f : 0.0f)", args[0]);
        return args[0];
      default: return call(float_function(f, options_.fast_math), args[0]);
    }
  }

  std::string interval_function(const Node& node) {
    const Function f = node.function();
    const ValueType operand = node.child(0).type;
    std::vector<std::string> args;
    for (const auto& child : node.children) args.push_back(interval(*child));
    switch (f) {
      case Function::abs: return call("iv_abs", args[0]);
      case Function::min: return call("iv_min", args[0], args[1]);
      case Function::max: return call("iv_max", args[0], args[1]);
      case Function::clamp: return call("iv_clamp", args[0], args[1], args[2]);
      case Function::pow: return call("iv_pow", args[0], args[1]);
      case Function::where: return call("iv_select", args[0], args[1], args[2]);
      case Function::to_int:
        if (operand == ValueType::floating) return call("iv_f2i", args[0]);
        if (operand == ValueType::boolean) return call("iv_tri_to_int", args[0]);
        return args[0];
      case Function::to_float:
        if (operand == ValueType::integer) return call("iv_i2f", args[0]);
        if (operand == ValueType::boolean) return call("iv_tri_to_float", args[0]);
        return args[0];
      default: {
        // iv_exp, iv_exp2, ... named after the function
        return call(fmt::format("iv_{}", expr::function_name(f)), args[0]);
      }
    }
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
  if (is_rank1_int_read_at(node, Builtin::q_idx)) uses.builtins.insert(static_cast<int>(Builtin::q_idx));
  if (is_rank1_int_read_at(node, Builtin::kv_idx)) uses.builtins.insert(static_cast<int>(Builtin::kv_idx));
  for (const auto& child : node.children) collect_summary_axes(*child, uses);
}

// Builtins read only as indices of non-summarised tensor reads are not needed in intervals.
void collect_interval_uses(const Node& node, Uses& uses) {
  if (node.kind == NodeKind::tensor_read) {
    uses.tensors.insert(node.op);
    collect_summary_axes(node, uses);
    return;
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
