#include "codegen/factor_score.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

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

// Whether lowered code names nothing: numbers (with a float suffix or an exponent), operators
// and parentheses only.
bool is_literal_code(const std::string& code) {
  static const std::regex number(R"((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?f?)");
  const std::string rest = std::regex_replace(code, number, "0");
  return std::none_of(rest.begin(), rest.end(), [](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
  });
}

class Factorer {
 public:
  Factorer(const expr::Signature& signature, const ScoreHoisting& hoisting)
      : signature_(signature), hoisting_(hoisting) {}

  FactoredScore factor_root(const Node& root, bool row_shift) {
    // What the core may read through a hoisted name: only values without the score, whose
    // names are still right (a rewritten `score / d` names the scaled score, not qk).
    for (const auto& [node, name] : *hoisting_.names) {
      if (!reads_score(*node)) result_.core_names.emplace(node, name);
    }
    if (!row_shift || !factor_with_row_shift(root)) {
      const Product product = factor(root);
      result_.factor = fmt::format("{} * {}", kLog2e, or_one(product.factor));
      result_.core = or_one(product.core);
    }
    result_.factor_is_literal = is_literal_code(result_.factor);
    return std::move(result_);
  }

 private:
  // A term of the score's top-level sum.
  struct SignedTerm {
    const Node* node;
    bool negative;
  };

  // A term of the row shift: coefficient (block-level code in the score's units; empty: 1)
  // times a basis.
  enum class Basis { one, row, key, distance };  // 1, a per-row value, kv_idx, kv_idx - q_idx
  struct ShiftTerm {
    std::string coefficient;
    Basis basis;
    std::string row_code;  // Basis::row
  };

  // The score as core + key_slope * kv_idx + row terms (the header); false, with nothing
  // recorded, where the sum has no such term or no term that reads the score.
  bool factor_with_row_shift(const Node& root) {
    const FactoredScore before = result_;
    std::vector<SignedTerm> terms;
    flatten_sum(root, false, terms);
    std::vector<SignedTerm> core_terms;
    std::vector<ShiftTerm> shifted;
    for (const SignedTerm& term : terms) {
      if (!reads_score(*term.node)) {
        const FactoredScore before_term = result_;
        if (std::optional<std::vector<ShiftTerm>> parts = shift_terms(*term.node)) {
          for (ShiftTerm& part : *parts) {
            if (term.negative) part.coefficient = negated(part.coefficient);
            shifted.push_back(std::move(part));
          }
          continue;
        }
        result_ = before_term;  // the term stays in the core: forget what its analysis lowered
      }
      core_terms.push_back(term);
    }
    std::size_t first_score = core_terms.size();
    for (std::size_t i = 0; i < core_terms.size() && first_score == core_terms.size(); ++i) {
      if (reads_score(*core_terms[i].node)) first_score = i;
    }
    if (shifted.empty() || first_score == core_terms.size()) {
      result_ = before;
      return false;
    }

    std::vector<Product> products;
    for (const SignedTerm& term : core_terms) products.push_back(factor(*term.node));
    const std::string common = products[first_score].factor;
    std::string core;
    for (std::size_t i = 0; i < core_terms.size(); ++i) {
      const std::string value = rescaled(products[i], common);
      const bool negative = core_terms[i].negative;
      core = core.empty() ? (negative ? fmt::format("(-{})", value) : value)
                          : fmt::format("({} {} {})", core, negative ? "-" : "+", value);
    }
    result_.factor = fmt::format("{} * {}", kLog2e, or_one(common));
    result_.core = core;
    emit_row_shift(shifted, common);
    return true;
  }

  // The shift's terms in the core's units (divided by the factor `common`), as constants.
  void emit_row_shift(const std::vector<ShiftTerm>& shifted, const std::string& common) {
    std::string distance_slope, key_slope, ones;
    std::vector<std::string> rows;
    for (const ShiftTerm& term : shifted) {
      const std::string k = quotient(term.coefficient, common);
      switch (term.basis) {
        case Basis::one: ones = summed(ones, or_one(k)); break;
        case Basis::distance: distance_slope = summed(distance_slope, or_one(k)); break;
        case Basis::key: key_slope = summed(key_slope, or_one(k)); break;
        case Basis::row:
          rows.push_back(times(term.row_code, k.empty() ? std::string() : constant(k)));
          break;
      }
    }
    std::string shift;
    if (!distance_slope.empty() || !key_slope.empty()) {
      result_.key_slope = constant(
          distance_slope.empty() ? key_slope
          : key_slope.empty()    ? distance_slope
                                 : fmt::format("({} + {})", distance_slope, key_slope));
    }
    if (!distance_slope.empty()) {
      shift = summed(shift, fmt::format("({} * attnjit::ops::i2f(attnjit::ops::sub_i(key_base, "
                                        "q_idx)))",
                                        constant(distance_slope)));
    }
    if (!key_slope.empty()) {
      shift = summed(shift, fmt::format("({} * attnjit::ops::i2f(key_base))", constant(key_slope)));
    }
    for (const std::string& row : rows) shift = summed(shift, row);
    if (!ones.empty()) shift = summed(shift, constant(ones));
    result_.row_shift = shift;
  }

  static std::string summed(const std::string& sum, const std::string& term) {
    return sum.empty() ? term : fmt::format("({} + {})", sum, term);
  }

  static std::string negated(const std::string& coefficient) {
    return coefficient.empty() ? "-1.0f" : fmt::format("(-{})", coefficient);
  }

  // The terms of a float sum, through + - and unary -, down to values the hoisting computes
  // whole (per block, per row, or named).
  void flatten_sum(const Node& node, bool negative, std::vector<SignedTerm>& terms) {
    const bool whole = hoisting_.is_block_level(node) || hoisting_.is_row_level(node) ||
                       result_.core_names.count(&node) != 0;
    if (!whole && node.type == ValueType::floating && node.kind == NodeKind::binary &&
        (node.binary_op() == BinaryOp::add || node.binary_op() == BinaryOp::sub)) {
      flatten_sum(node.child(0), negative, terms);
      flatten_sum(node.child(1), node.binary_op() == BinaryOp::sub ? !negative : negative, terms);
      return;
    }
    if (!whole && node.type == ValueType::floating && node.kind == NodeKind::unary &&
        node.unary_op() == expr::UnaryOp::neg) {
      flatten_sum(node.child(0), !negative, terms);
      return;
    }
    terms.push_back(SignedTerm{&node, negative});
  }

  // A value without the score as a sum of block-level multiples of 1, of per-row values, of
  // kv_idx and of kv_idx - q_idx; nothing where it is not one (a per-column or per-element
  // value that is not a multiple of kv_idx: it stays in the core).
  std::optional<std::vector<ShiftTerm>> shift_terms(const Node& node) {
    using Terms = std::vector<ShiftTerm>;
    if (hoisting_.is_block_level(node)) return Terms{{lower_block(node), Basis::one, ""}};
    if (hoisting_.is_row_level(node)) return Terms{{"", Basis::row, lower_shift(node)}};
    if (node.type != ValueType::floating) return std::nullopt;
    if (node.kind == NodeKind::function && node.function() == expr::Function::to_float) {
      const Node& index = node.child(0);
      if (is_builtin(index, Builtin::kv_idx)) return Terms{{"", Basis::key, ""}};
      if (index.kind == NodeKind::binary && index.binary_op() == BinaryOp::sub) {
        if (is_builtin(index.child(0), Builtin::kv_idx) &&
            is_builtin(index.child(1), Builtin::q_idx)) {
          return Terms{{"", Basis::distance, ""}};
        }
        if (is_builtin(index.child(0), Builtin::q_idx) &&
            is_builtin(index.child(1), Builtin::kv_idx)) {
          return Terms{{"-1.0f", Basis::distance, ""}};
        }
      }
      return std::nullopt;
    }
    if (node.kind == NodeKind::unary && node.unary_op() == expr::UnaryOp::neg) {
      std::optional<Terms> terms = shift_terms(node.child(0));
      if (terms) {
        for (ShiftTerm& term : *terms) term.coefficient = negated(term.coefficient);
      }
      return terms;
    }
    if (node.kind != NodeKind::binary) return std::nullopt;
    const Node& left = node.child(0);
    const Node& right = node.child(1);
    switch (node.binary_op()) {
      case BinaryOp::add:
      case BinaryOp::sub: {
        std::optional<Terms> terms = shift_terms(left);
        std::optional<Terms> others = shift_terms(right);
        if (!terms || !others) return std::nullopt;
        for (ShiftTerm& term : *others) {
          if (node.binary_op() == BinaryOp::sub) term.coefficient = negated(term.coefficient);
          terms->push_back(std::move(term));
        }
        return terms;
      }
      case BinaryOp::mul: {
        const bool left_block = hoisting_.is_block_level(left);
        if (!left_block && !hoisting_.is_block_level(right)) return std::nullopt;
        std::optional<Terms> terms = shift_terms(left_block ? right : left);
        if (terms) {
          const std::string multiplier = lower_block(left_block ? left : right);
          for (ShiftTerm& term : *terms) term.coefficient = times(term.coefficient, multiplier);
        }
        return terms;
      }
      case BinaryOp::div: {
        if (!hoisting_.is_block_level(right)) return std::nullopt;
        std::optional<Terms> terms = shift_terms(left);
        if (terms) {
          const std::string divisor = lower_block(right);
          for (ShiftTerm& term : *terms) term.coefficient = quotient(term.coefficient, divisor);
        }
        return terms;
      }
      default: return std::nullopt;
    }
  }

  static bool is_builtin(const Node& node, Builtin builtin) {
    return node.kind == NodeKind::builtin && node.builtin() == builtin;
  }

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

  // A per-row value in the shift's code.
  std::string lower_shift(const Node& node) {
    if (result_.core_names.count(&node) == 0) result_.shift_reads.push_back(&node);
    return operand(lower_element(node, signature_, options(&result_.core_names)));
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

FactoredScore factor_score(const expr::Expression& score, const ScoreHoisting& hoisting,
                           bool row_shift) {
  return Factorer(score.signature(), hoisting).factor_root(score.root(), row_shift);
}

}  // namespace attnjit::codegen
