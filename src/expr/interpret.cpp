#include "expr/interpret.hpp"

#include <vector>

#include "expr/evaluator.hpp"

namespace attnjit::expr {
namespace {

constexpr int kInlineStack = 256;

// Values as the generated element code holds them: int, float and bool in 32 bits.
class ScalarDomain {
 public:
  using Slot = Value;

  ScalarDomain(const VariantArgs* args, const Frame& frame) : args_(args), frame_(frame) {}

  static std::int32_t get_int(const Slot& s) { return s.i; }
  static float get_float(const Slot& s) { return s.f; }
  static bool get_bool(const Slot& s) { return s.i != 0; }
  static void put(Slot& s, std::int32_t v) { s.i = v; }
  static void put(Slot& s, float v) { s.f = v; }
  static void put(Slot& s, bool v) { s.i = v ? 1 : 0; }
  template <class Row, class... A>
  static auto apply(A... a) {
    return Row::element(a...);
  }

  Slot constant(const Instr& in) const { return in.imm; }
  Slot builtin(Builtin builtin) const { return frame_.builtins[static_cast<int>(builtin)]; }
  // Note: float parameters travel as their bits, which is what the slot holds.
  Slot param(const Instr& in) const { return make_i(args_->scalars[in.a]); }
  Slot read_at(int tensor, SummaryAxis axis) const {
    const Builtin at = axis == SummaryAxis::q ? Builtin::q_idx : Builtin::kv_idx;
    return make_i(ops::read_i32(args_->tensors[tensor], builtin(at).i));
  }
  Slot read(const Instr& in, const Slot* indices) const {
    const TensorArg& tensor = args_->tensors[in.a];
    Slot out;
    if (in.op == Opcode::read_1) {
      if (in.type == ValueType::integer) {
        out.i = ops::read_i32(tensor, indices[0].i);
      } else {
        out.f = ops::read_f32(tensor, indices[0].i);
      }
    } else if (in.type == ValueType::integer) {
      out.i = ops::read_i32(tensor, indices[0].i, indices[1].i);
    } else {
      out.f = ops::read_f32(tensor, indices[0].i, indices[1].i);
    }
    return out;
  }
  Slot select(ValueType, const Slot& c, const Slot& a, const Slot& b) const {
    return c.i ? a : b;
  }

 private:
  static Slot make_i(std::int32_t i) {
    Slot s;
    s.i = i;
    return s;
  }

  const VariantArgs* args_;
  const Frame& frame_;
};

}  // namespace

Value run_program(const Program& program, const VariantArgs* args, const Frame& frame) {
  const ScalarDomain domain(args, frame);
  if (program.max_stack <= kInlineStack) {
    Value stack[kInlineStack];
    return evaluate(program, domain, stack);
  }
  // Note: only expressions nested far beyond any practical use get here.
  std::vector<Value> stack(static_cast<std::size_t>(program.max_stack));
  return evaluate(program, domain, stack.data());
}

}  // namespace attnjit::expr
