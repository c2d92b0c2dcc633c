#include "expr/interpret.hpp"

#include <vector>

#include "attnjit/expr_ops.cuh"

namespace attnjit::expr {
namespace {

constexpr int kInlineStack = 256;

Value make_i(std::int32_t i) {
  Value v;
  v.i = i;
  return v;
}
Value make_f(float f) {
  Value v;
  v.f = f;
  return v;
}

Value run(const Program& program, const VariantArgs* args, const Frame& frame, Value* stack) {
  namespace ops = attnjit::ops;
  int sp = 0;  // number of values on the stack
  for (const Instr& in : program.code) {
    Value* top = stack + sp;  // one past the top
    switch (in.op) {
      case Opcode::push: stack[sp++] = in.imm; break;
      case Opcode::load_builtin: stack[sp++] = frame.builtins[in.a]; break;
      case Opcode::load_param: stack[sp++] = make_i(args->scalars[in.a]); break;
      case Opcode::read_i32_at_q:
        stack[sp++] = make_i(ops::read_i32(args->tensors[in.a], frame.builtins[2].i));
        break;
      case Opcode::read_i32_at_kv:
        stack[sp++] = make_i(ops::read_i32(args->tensors[in.a], frame.builtins[3].i));
        break;
      case Opcode::read_i32_1: top[-1] = make_i(ops::read_i32(args->tensors[in.a], top[-1].i)); break;
      case Opcode::read_f32_1: top[-1] = make_f(ops::read_f32(args->tensors[in.a], top[-1].i)); break;
      case Opcode::read_i32_2:
        top[-2] = make_i(ops::read_i32(args->tensors[in.a], top[-2].i, top[-1].i));
        --sp;
        break;
      case Opcode::read_f32_2:
        top[-2] = make_f(ops::read_f32(args->tensors[in.a], top[-2].i, top[-1].i));
        --sp;
        break;
      case Opcode::neg_i: top[-1].i = ops::neg_i(top[-1].i); break;
      case Opcode::neg_f: top[-1].f = -top[-1].f; break;
      case Opcode::not_b: top[-1].i = top[-1].i ^ 1; break;
      case Opcode::bitnot_i: top[-1].i = ~top[-1].i; break;
#define ATTNJIT_BINARY(OPCODE, FIELD, EXPR)   \
  case Opcode::OPCODE: {                      \
    const Value a = top[-2], b = top[-1];     \
    top[-2].FIELD = (EXPR);                   \
    --sp;                                     \
    break;                                    \
  }
      ATTNJIT_BINARY(add_i, i, ops::add_i(a.i, b.i))
      ATTNJIT_BINARY(sub_i, i, ops::sub_i(a.i, b.i))
      ATTNJIT_BINARY(mul_i, i, ops::mul_i(a.i, b.i))
      ATTNJIT_BINARY(div_i, i, ops::div_i(a.i, b.i))
      ATTNJIT_BINARY(mod_i, i, ops::mod_i(a.i, b.i))
      ATTNJIT_BINARY(add_f, f, a.f + b.f)
      ATTNJIT_BINARY(sub_f, f, a.f - b.f)
      ATTNJIT_BINARY(mul_f, f, a.f * b.f)
      ATTNJIT_BINARY(div_f, f, a.f / b.f)
      ATTNJIT_BINARY(lt_i, i, a.i < b.i)
      ATTNJIT_BINARY(le_i, i, a.i <= b.i)
      ATTNJIT_BINARY(gt_i, i, a.i > b.i)
      ATTNJIT_BINARY(ge_i, i, a.i >= b.i)
      ATTNJIT_BINARY(eq_i, i, a.i == b.i)
      ATTNJIT_BINARY(ne_i, i, a.i != b.i)
      ATTNJIT_BINARY(lt_f, i, a.f < b.f)
      ATTNJIT_BINARY(le_f, i, a.f <= b.f)
      ATTNJIT_BINARY(gt_f, i, a.f > b.f)
      ATTNJIT_BINARY(ge_f, i, a.f >= b.f)
      ATTNJIT_BINARY(eq_f, i, a.f == b.f)
      ATTNJIT_BINARY(ne_f, i, a.f != b.f)
      ATTNJIT_BINARY(and_b, i, a.i & b.i)
      ATTNJIT_BINARY(or_b, i, a.i | b.i)
      ATTNJIT_BINARY(eq_b, i, a.i == b.i)
      ATTNJIT_BINARY(ne_b, i, a.i != b.i)
      ATTNJIT_BINARY(bitand_i, i, a.i & b.i)
      ATTNJIT_BINARY(bitor_i, i, a.i | b.i)
      ATTNJIT_BINARY(bitxor_i, i, a.i ^ b.i)
      ATTNJIT_BINARY(shl_i, i, ops::shl_i(a.i, b.i))
      ATTNJIT_BINARY(shr_i, i, ops::shr_i(a.i, b.i))
      ATTNJIT_BINARY(min_i, i, ops::min_i(a.i, b.i))
      ATTNJIT_BINARY(min_f, f, ops::min_f(a.f, b.f))
      ATTNJIT_BINARY(max_i, i, ops::max_i(a.i, b.i))
      ATTNJIT_BINARY(max_f, f, ops::max_f(a.f, b.f))
      ATTNJIT_BINARY(pow_f, f, ops::pow_f(a.f, b.f))
#undef ATTNJIT_BINARY
      case Opcode::select:
        top[-3] = top[-3].i ? top[-2] : top[-1];
        sp -= 2;
        break;
      case Opcode::clamp_i:
        top[-3].i = ops::clamp_i(top[-3].i, top[-2].i, top[-1].i);
        sp -= 2;
        break;
      case Opcode::clamp_f:
        top[-3].f = ops::clamp_f(top[-3].f, top[-2].f, top[-1].f);
        sp -= 2;
        break;
      case Opcode::abs_i: top[-1].i = ops::abs_i(top[-1].i); break;
      case Opcode::abs_f: top[-1].f = ops::abs_f(top[-1].f); break;
      case Opcode::exp_f: top[-1].f = ops::exp_f(top[-1].f); break;
      case Opcode::exp2_f: top[-1].f = ops::exp2_f(top[-1].f); break;
      case Opcode::log_f: top[-1].f = ops::log_f(top[-1].f); break;
      case Opcode::log2_f: top[-1].f = ops::log2_f(top[-1].f); break;
      case Opcode::sqrt_f: top[-1].f = ops::sqrt_f(top[-1].f); break;
      case Opcode::rsqrt_f: top[-1].f = ops::rsqrt_f(top[-1].f); break;
      case Opcode::tanh_f: top[-1].f = ops::tanh_f(top[-1].f); break;
      case Opcode::sigmoid_f: top[-1].f = ops::sigmoid_f(top[-1].f); break;
      case Opcode::floor_f: top[-1].f = ops::floor_f(top[-1].f); break;
      case Opcode::ceil_f: top[-1].f = ops::ceil_f(top[-1].f); break;
      case Opcode::f2i: top[-1].i = ops::f2i(top[-1].f); break;
      case Opcode::i2f: top[-1].f = ops::i2f(top[-1].i); break;
      case Opcode::b2f: top[-1].f = top[-1].i ? 1.0f : 0.0f; break;
      case Opcode::b2i:
      case Opcode::nop: break;
    }
  }
  return stack[0];
}

}  // namespace

Value run_program(const Program& program, const VariantArgs* args, const Frame& frame) {
  if (program.max_stack <= kInlineStack) {
    Value stack[kInlineStack];
    return run(program, args, frame, stack);
  }
  // Note: only expressions nested far beyond any practical use get here.
  std::vector<Value> stack(static_cast<std::size_t>(program.max_stack));
  return run(program, args, frame, stack.data());
}

}  // namespace attnjit::expr
