#include "codegen/lower_hooks.hpp"

#include <array>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codegen/factor_score.hpp"
#include "codegen/lower_expr.hpp"
#include "expr/ast.hpp"
#include "expr/names.hpp"

namespace attnjit::codegen {
namespace {

using expr::Builtin;
using expr::Node;
using expr::NodeKind;
using expr::ValueType;

// How often a value changes in the kernel's loops: ordered, except that a value of both a row
// and a column is an element value.
enum class Level { block = 0, row = 1, col = 2, element = 3 };

Level combine(Level a, Level b) {
  if (a == b) return a;
  if (a == Level::block) return b;
  if (b == Level::block) return a;
  return Level::element;  // row with col, or anything with element
}

Level builtin_level(Builtin builtin) {
  switch (builtin) {
    case Builtin::q_idx: return Level::row;
    case Builtin::kv_idx: return Level::col;
    case Builtin::score: return Level::element;
    default: return Level::block;  // b, h, q_len, kv_len, num_heads
  }
}

const char* cpp_type(ValueType type) {
  switch (type) {
    case ValueType::boolean: return "bool";
    case ValueType::integer: return "int";
    default: return "float";
  }
}

bool is_leaf(const Node& node) {
  return node.kind == NodeKind::constant || node.kind == NodeKind::builtin ||
         node.kind == NodeKind::param;
}

struct Field {
  std::string type;
  std::string member;  // v0, v1, ...
  std::string code;
  const Node* node;  // what the code reads (its inputs are declared); null: hoisted values only
};

class Hoister {
 public:
  explicit Hoister(const expr::Signature& signature) : signature_(signature) {}

  // Hoists the parts of `root` that do not change with both indices; `fast_math` as for its
  // element function.
  void hoist_parts_of(const Node& root, bool fast_math) {
    const Level level = level_of(root);
    if (level != Level::element && !is_leaf(root)) {
      hoist(root, level, fast_math);
    } else {
      hoist_children(root, level, fast_math);
      if (fast_math) rewrite_fast(root, level);
    }
  }

  const HoistedNames& names() const { return names_; }
  const HoistedNames& reciprocals() const { return reciprocals_; }
  bool is_block_level(const Node& node) { return level_of(node) == Level::block; }
  bool is_row_level(const Node& node) { return level_of(node) == Level::row; }
  const std::vector<Field>& fields(Level level) const {
    return fields_[static_cast<std::size_t>(level)];
  }

 private:
  Level level_of(const Node& node) {
    const auto found = levels_.find(&node);
    if (found != levels_.end()) return found->second;
    Level level = node.kind == NodeKind::builtin ? builtin_level(node.builtin()) : Level::block;
    for (const auto& child : node.children) level = combine(level, level_of(*child));
    levels_.emplace(&node, level);
    return level;
  }

  // Children that change less often than their parent (and are worth a value) are hoisted.
  void hoist_children(const Node& node, Level level, bool fast_math) {
    for (const auto& child : node.children) {
      const Level child_level = level_of(*child);
      if (child_level != level && !is_leaf(*child)) {
        hoist(*child, child_level, fast_math);
      } else {
        hoist_children(*child, child_level, fast_math);
        if (fast_math) rewrite_fast(*child, child_level);
      }
    }
  }

  // Element-level forms that are cheaper under fast math (score expressions only):
  //  - x / d with d constant per block, row or column: x * (1 / d), the reciprocal hoisted
  //    (within 1.5 ulp of the division; the division itself is a long sequence);
  //  - float(i - j) of the indices q_idx and kv_idx: float(i) - float(j), each conversion
  //    hoisted to its row or column (the integer-to-float conversion runs at a quarter of the
  //    FMA rate). Exact while both indices are below 2^24.
  void rewrite_fast(const Node& node, Level level) {
    if (level != Level::element || names_.count(&node) != 0) return;
    ElementOptions options;
    options.fast_math = true;
    options.hoisted = &names_;
    if (node.kind == NodeKind::binary && node.binary_op() == expr::BinaryOp::div &&
        node.type == ValueType::floating) {
      const Node& divisor = node.child(1);
      const Level divisor_level = level_of(divisor);
      if (divisor_level == Level::element) return;
      const std::string reciprocal =
          add_field(divisor_level, "float",
                    fmt::format("1.0f / ({})", lower_element(divisor, signature_, options)),
                    names_.count(&divisor) != 0 ? nullptr : &divisor);
      names_.emplace(&node, fmt::format("({} * {})", lower_element(node.child(0), signature_, options),
                                        reciprocal));
      reciprocals_.emplace(&node, reciprocal);
      return;
    }
    if (node.kind == NodeKind::function && node.function() == expr::Function::to_float &&
        node.child(0).kind == NodeKind::binary && node.child(0).binary_op() == expr::BinaryOp::sub) {
      const Node& difference = node.child(0);
      const Node& left = difference.child(0);
      const Node& right = difference.child(1);
      if (!is_index(left) || !is_index(right) || left.builtin() == right.builtin()) return;
      const std::string left_value = index_as_float(left);
      const std::string right_value = index_as_float(right);
      names_.emplace(&node, fmt::format("({} - {})", left_value, right_value));
    }
  }

  static bool is_index(const Node& node) {
    return node.kind == NodeKind::builtin &&
           (node.builtin() == Builtin::q_idx || node.builtin() == Builtin::kv_idx);
  }

  std::string index_as_float(const Node& index) {
    return add_field(builtin_level(index.builtin()), "float",
                     fmt::format("attnjit::ops::i2f({})", expr::builtin_name(index.builtin())),
                     &index);
  }

  // A value of `level` computed by `code` (which reads the inputs of `reads`); shared with an
  // identical one. Returns how element code names it.
  std::string add_field(Level level, const std::string& type, const std::string& code,
                        const Node* reads) {
    std::vector<Field>& fields = fields_[static_cast<std::size_t>(level)];
    for (const Field& field : fields) {
      if (field.code == code && field.type == type) return access(level, field.member);
    }
    fields.push_back(Field{type, fmt::format("v{}", fields.size()), code, reads});
    return access(level, fields.back().member);
  }

  // Note: the node's own code is lowered after its descendants are hoisted (they appear by
  // name in it) and before it is named itself.
  void hoist(const Node& node, Level level, bool fast_math) {
    hoist_children(node, level, fast_math);
    ElementOptions options;
    options.fast_math = fast_math;
    options.hoisted = &names_;
    const std::string code = lower_element(node, signature_, options);
    names_.emplace(&node, add_field(level, cpp_type(node.type), code, &node));
  }

  static std::string access(Level level, const std::string& member) {
    static constexpr std::array<const char*, 3> kValues = {kBlockValues, kRowValues, kColValues};
    return fmt::format("{}.{}", kValues[static_cast<std::size_t>(level)], member);
  }

  const expr::Signature& signature_;
  std::map<const Node*, Level> levels_;
  HoistedNames names_;
  HoistedNames reciprocals_;  // x / d rewritten: d's reciprocal, by the division
  std::array<std::vector<Field>, 3> fields_;
};

std::string struct_text(const char* name, const std::vector<Field>& fields) {
  if (fields.empty()) return fmt::format("  struct {} {{}};\n", name);
  std::string out = fmt::format("  struct {} {{\n", name);
  for (const Field& field : fields) out += fmt::format("    {} {};\n", field.type, field.member);
  return out + "  };\n";
}

// Body of block(), row() or col(): the inputs its fields read, then one assignment per field.
std::string values_body(const char* type, const char* values, const std::vector<Field>& fields,
                        const expr::Signature& signature, const HoistedNames& names) {
  std::vector<const Node*> roots;
  for (const Field& field : fields) {
    if (field.node != nullptr) roots.push_back(field.node);
  }
  std::string out = declare_element_inputs(signature, roots, &names);
  out += fmt::format("  {} {}{{}};\n", type, values);
  for (const Field& field : fields) {
    out += fmt::format("  {}.{} = {};\n", values, field.member, field.code);
  }
  return out + fmt::format("  return {};\n", values);
}

// row() or col(): the values of one query row or key column, given the block's.
std::string index_values_function(const char* type, const char* function, const char* values,
                                  const char* index, const std::vector<Field>& fields,
                                  const expr::Signature& signature, const HoistedNames& names) {
  std::string s = fmt::format(
      "  ATTNJIT_DEVICE static {0} {1}(const Block& {2}, const attnjit::VariantArgs& args, int b,\n"
      "                                int h, int {3}, int q_len, int kv_len, int num_heads) {{\n",
      type, function, kBlockValues, index);
  s += indent_member_body(values_body(type, values, fields, signature, names));
  return s + "  }\n\n";
}

// ScoreConstants, score_constants() and score_core(): the score as the kernel evaluates it
// (codegen/factor_score.hpp).
std::string factored_score_text(const FactoredScore& factored, const expr::Signature& signature,
                                const HoistedNames& names) {
  std::string s =
      "  // The score as the kernel evaluates it (codegen/factor_score.hpp): log2(e) times the\n"
      "  // score of qk * scale is score_constants.factor times the core of qk; the constants are\n"
      "  // computed once per block.\n";
  s += "  struct ScoreConstants {\n    float factor;\n";
  for (const ScoreConstant& constant : factored.constants) {
    s += fmt::format("    float {};\n", constant.member);
  }
  s += "  };\n\n";
  s += fmt::format(
      "  ATTNJIT_DEVICE static ScoreConstants score_constants(const Block& {},\n"
      "                                                       const attnjit::VariantArgs& args,\n"
      "                                                       float scale, int b, int h, int q_len,\n"
      "                                                       int kv_len, int num_heads) {{\n",
      kBlockValues);
  std::string body = declare_element_inputs(signature, factored.constant_reads, &names);
  body += "  ScoreConstants score_constants{};\n";
  for (const ScoreConstant& constant : factored.constants) {
    body += fmt::format("  score_constants.{} = {};\n", constant.member, constant.code);
  }
  // Note: a factor of literals alone goes through runtime_f (expr_ops.cuh says why), so that it
  // compiles as its parameter form does; every other factor's code is as it was.
  body += fmt::format(
      "  score_constants.factor = {};\n  return score_constants;\n",
      factored.factor_is_literal ? fmt::format("attnjit::ops::runtime_f({})", factored.factor)
                                 : factored.factor);
  s += indent_member_body(body) + "  }\n\n";
  s += fmt::format(
      "  ATTNJIT_DEVICE static float score_core(const ScoreConstants& score_constants,\n"
      "                                         const Block& {}, const Row& {},\n"
      "                                         const Col& {}, const attnjit::VariantArgs& args,\n"
      "                                         float qk, int b, int h, int q_idx, int kv_idx,\n"
      "                                         int q_len, int kv_len, int num_heads) {{\n",
      kBlockValues, kRowValues, kColValues);
  body = declare_element_inputs(signature, factored.core_reads, &factored.core_names);
  body += fmt::format("  return {};\n", factored.core);
  s += indent_member_body(body) + "  }\n";
  if (factored.row_shift.empty()) return s;
  s += "\n"
       "  // The row shift (codegen/factor_score.hpp): the score's core is score_core's value,\n"
       "  // plus the key slope times kv_idx - key_base, plus the row's shift at key_base.\n"
       "  static constexpr bool kScoreRowShift = true;\n";
  s += fmt::format("  static constexpr bool kScoreKeySlope = {};\n",
                   factored.key_slope.empty() ? "false" : "true");
  if (!factored.key_slope.empty()) {
    s += fmt::format(
        "  ATTNJIT_DEVICE static float score_key_slope(const ScoreConstants& score_constants) {{\n"
        "    return {};\n"
        "  }}\n",
        factored.key_slope);
  }
  s += fmt::format(
      "  ATTNJIT_DEVICE static float score_row_shift(const ScoreConstants& score_constants,\n"
      "                                              const Block& {}, const Row& {},\n"
      "                                              const attnjit::VariantArgs& args, int b,\n"
      "                                              int h, int q_idx, int key_base, int q_len,\n"
      "                                              int kv_len, int num_heads) {{\n",
      kBlockValues, kRowValues);
  body = declare_element_inputs(signature, factored.shift_reads, &factored.core_names);
  body += fmt::format("  return {};\n", factored.row_shift);
  s += indent_member_body(body) + "  }\n";
  return s;
}

std::string mask_body(const expr::Expression& mask, const HoistedNames& names) {
  ElementOptions options;
  options.hoisted = &names;
  return lower_element_body(mask, options);
}

}  // namespace

std::string indent_member_body(const std::string& body) {
  std::string out;
  std::size_t start = 0;
  while (start < body.size()) {
    std::size_t end = body.find('\n', start);
    if (end == std::string::npos) end = body.size();
    if (end > start) out += "  " + body.substr(start, end - start);
    out += '\n';
    start = end + 1;
  }
  return out;
}

std::string lower_element_hooks(const expr::Expression& mask, const expr::Expression& score,
                                bool row_shift) {
  // Note: the mask and the score are declared against the same parameters and tensors, so one
  // signature names the inputs of the shared Block / Row / Col functions.
  const expr::Signature& signature = mask.signature();
  Hoister hoister(signature);
  hoister.hoist_parts_of(mask.root(), false);
  hoister.hoist_parts_of(score.root(), true);
  const HoistedNames& names = hoister.names();

  std::string s;
  s += "  // Parts of the mask and score that change less often than the element: computed once per\n"
       "  // block, per query row and per key column of a tile (codegen/lower_hooks.hpp).\n";
  s += struct_text("Block", hoister.fields(Level::block));
  s += struct_text("Row", hoister.fields(Level::row));
  s += struct_text("Col", hoister.fields(Level::col));
  s += "\n";
  s += "  ATTNJIT_DEVICE static Block block(const attnjit::VariantArgs& args, int b, int h, int q_len,\n"
       "                                    int kv_len, int num_heads) {\n";
  s += indent_member_body(values_body("Block", kBlockValues, hoister.fields(Level::block), signature, names));
  s += "  }\n\n";
  s += index_values_function("Row", "row", kRowValues, "q_idx", hoister.fields(Level::row),
                             signature, names);
  s += index_values_function("Col", "col", kColValues, "kv_idx", hoister.fields(Level::col),
                             signature, names);
  const std::string hoisted_params = fmt::format(
      "const Block& {}, const Row& {},\n"
      "                                  const Col& {}, const attnjit::VariantArgs& args,",
      kBlockValues, kRowValues, kColValues);
  s += fmt::format("  ATTNJIT_DEVICE static bool mask({}\n"
                   "                                  int b, int h, int q_idx, int kv_idx, int q_len,\n"
                   "                                  int kv_len, int num_heads) {{\n",
                   hoisted_params);
  s += indent_member_body(mask_body(mask, names));
  s += "  }\n\n";
  // Note: the score is written only in its factored form, the one the kernels evaluate.
  ScoreHoisting hoisting;
  hoisting.is_block_level = [&hoister](const Node& node) { return hoister.is_block_level(node); };
  hoisting.is_row_level = [&hoister](const Node& node) { return hoister.is_row_level(node); };
  hoisting.names = &names;
  hoisting.reciprocals = &hoister.reciprocals();
  s += factored_score_text(factor_score(score, hoisting, row_shift), signature, names);
  return s;
}

}  // namespace attnjit::codegen
