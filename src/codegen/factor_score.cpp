#include "codegen/factor_score.hpp"

#include <cctype>
#include <map>
#include <string>

#include <fmt/format.h>

#include "expr/ast.hpp"

namespace attnjit::codegen {
namespace {

using expr::BinaryOp;
using expr::Builtin;
using expr::Node;
using expr::NodeKind;
using expr::ValueType;

constexpr const char* kLog2e = "1.4426950408889634f";

// A value as factor * core, each C++ code; an empty string stands for 1.
struct Product {
  std::string factor;  // per block
  std::string core;    // per element
};

std::string times(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return fmt::format("({} * {})", a, b);
}

std::string quotient(const std::string& numerator, const std::string& denominator) {
  if (numerator == denominator) return "";
  if (denominator.empty()) return numerator;
  return fmt::format("({} / {})", numerator.empty() ? "1.0f" : numerator, denominator);
}

std::string or_one(const std::string& code) { return code.empty() ? "1.0f" : code; }

// lower_element's code as an operand: parenthesized unless it is a name or a number.
std::string operand(const std::string& code) {
  for (const char c : code) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') {
      return "(" + code + ")";
    }
  }
  return code;
}

class Factorer {
 public:
  Factorer(const expr::Signature& signature, const ScoreHoisting& hoisting)
      : signature_(signature), hoisting_(hoisting) {}

  FactoredScore factor_root(const Node& root) {
    // What the core may read through a hoisted name: only values without the score, whose
    // names are still right (a rewritten `score / d` names the scaled score, not qk).
    for (const auto& [node, name] : *hoisting_.names) {
      if (!reads_score(*node)) result_.core_names.emplace(node, name);
    }
    const Product product = factor(root);
    result_.factor = fmt::format("{} * {}", kLog2e, or_one(product.factor));
    result_.core = or_one(product.core);
    return std::move(result_);
  }

 private:
  // Note: the rules below apply to float sub-expressions without the score too (ALiBi's
  // slope * float(kv_idx - q_idx) gives the slope to the factor), except where a value is
  // already hoisted whole.
  Product factor(const Node& node) {
    if (hoisting_.is_block_level(node)) return {lower_block(node), ""};
    if (result_.core_names.count(&node) != 0) return {"", lower_core(node)};
    if (node.kind == NodeKind::builtin && node.builtin() == Builtin::score) return {"scale", "qk"};
    if (node.type == ValueType::floating && node.kind == NodeKind::unary &&
        node.unary_op() == expr::UnaryOp::neg) {
      const Product operand = factor(node.child(0));
      return {operand.factor, fmt::format("(-{})", or_one(operand.core))};
    }
    if (node.type == ValueType::floating && node.kind == NodeKind::binary) {
      const Node& left = node.child(0);
      const Node& right = node.child(1);
      switch (node.binary_op()) {
        case BinaryOp::mul: {
          const Product a = factor(left);
          const Product b = factor(right);
          return {times(a.factor, b.factor), times(a.core, b.core)};
        }
        case BinaryOp::div:
          if (!reads_score(right)) return divided(node, factor(left), right);
          break;
        case BinaryOp::add:
        case BinaryOp::sub: {
          const Product a = factor(left);
          const Product b = factor(right);
          // The factor of a side that reads the score (the left one when both do).
          const std::string& common = reads_score(left) ? a.factor : b.factor;
          const char* op = node.binary_op() == BinaryOp::add ? "+" : "-";
          return {common, fmt::format("({} {} {})", rescaled(a, common), op, rescaled(b, common))};
        }
        default: break;
      }
    }
    if (!reads_score(node)) return {"", lower_core(node)};
    return {"", lower_with_factored_operands(node)};
  }

  // a / d with d free of the score: a per-block d joins the factor; a per-row or per-column d
  // multiplies the core by its hoisted reciprocal.
  Product divided(const Node& node, const Product& numerator, const Node& divisor) {
    if (hoisting_.is_block_level(divisor)) {
      return {quotient(numerator.factor, lower_block(divisor)), numerator.core};
    }
    const auto reciprocal = hoisting_.reciprocals->find(&node);
    if (reciprocal != hoisting_.reciprocals->end()) {
      return {numerator.factor, times(or_one(numerator.core), reciprocal->second)};
    }
    return {numerator.factor,
            fmt::format("attnjit::ops::fast_div_f({}, {})", or_one(numerator.core),
                        lower_core(divisor))};
  }

  // One side of a sum as a multiple of the factor `common`: its core times the ratio of the
  // factors (a per-block constant).
  std::string rescaled(const Product& side, const std::string& common) {
    const std::string ratio = quotient(side.factor, common);
    return or_one(times(side.core, ratio.empty() ? std::string() : constant(ratio)));
  }

  // The node as written, its operands that read the score given as F * core.
  std::string lower_with_factored_operands(const Node& node) {
    for (const auto& child : node.children) {
      if (!reads_score(*child)) continue;
      const Product operand = factor(*child);
      const std::string factor_value =
          operand.factor.empty() ? std::string() : constant(operand.factor);
      result_.core_names[child.get()] = or_one(times(factor_value, operand.core));
    }
    return lower_core(node);
  }

  std::string lower_block(const Node& node) {
    if (hoisting_.names->count(&node) == 0) result_.constant_reads.push_back(&node);
    return operand(lower_element(node, signature_, options(hoisting_.names)));
  }

  std::string lower_core(const Node& node) {
    if (result_.core_names.count(&node) == 0) result_.core_reads.push_back(&node);
    return operand(lower_element(node, signature_, options(&result_.core_names)));
  }

  static ElementOptions options(const HoistedNames* names) {
    ElementOptions options;
    options.fast_math = true;
    options.hoisted = names;
    return options;
  }

  // A per-block value for the core: a member of ScoreConstants, shared by identical code.
  std::string constant(const std::string& code) {
    for (const ScoreConstant& existing : result_.constants) {
      if (existing.code == code) return "score_constants." + existing.member;
    }
    result_.constants.push_back(
        ScoreConstant{fmt::format("c{}", result_.constants.size()), code});
    return "score_constants." + result_.constants.back().member;
  }

  bool reads_score(const Node& node) {
    const auto found = reads_score_.find(&node);
    if (found != reads_score_.end()) return found->second;
    bool reads = node.kind == NodeKind::builtin && node.builtin() == Builtin::score;
    for (const auto& child : node.children) reads = reads_score(*child) || reads;
    reads_score_.emplace(&node, reads);
    return reads;
  }

  const expr::Signature& signature_;
  const ScoreHoisting& hoisting_;
  std::map<const Node*, bool> reads_score_;
  FactoredScore result_;
};

}  // namespace

FactoredScore factor_score(const expr::Expression& score, const ScoreHoisting& hoisting) {
  return Factorer(score.signature(), hoisting).factor_root(score.root());
}

}  // namespace attnjit::codegen
