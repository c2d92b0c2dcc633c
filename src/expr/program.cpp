#include "expr/program.hpp"

#include <algorithm>
#include <stdexcept>

namespace attnjit::expr {
namespace {

Opcode binary_opcode(BinaryOp op, ValueType operand) {
  const bool f = operand == ValueType::floating;
  const bool b = operand == ValueType::boolean;
  switch (op) {
    case BinaryOp::add: return f ? Opcode::add_f : Opcode::add_i;
    case BinaryOp::sub: return f ? Opcode::sub_f : Opcode::sub_i;
    case BinaryOp::mul: return f ? Opcode::mul_f : Opcode::mul_i;
    case BinaryOp::div: return f ? Opcode::div_f : Opcode::div_i;
    case BinaryOp::mod: return Opcode::mod_i;
    case BinaryOp::lt: return f ? Opcode::lt_f : Opcode::lt_i;
    case BinaryOp::le: return f ? Opcode::le_f : Opcode::le_i;
    case BinaryOp::gt: return f ? Opcode::gt_f : Opcode::gt_i;
    case BinaryOp::ge: return f ? Opcode::ge_f : Opcode::ge_i;
    case BinaryOp::eq: return f ? Opcode::eq_f : b ? Opcode::eq_b : Opcode::eq_i;
    case BinaryOp::ne: return f ? Opcode::ne_f : b ? Opcode::ne_b : Opcode::ne_i;
    case BinaryOp::logical_and: return Opcode::and_b;
    case BinaryOp::logical_or: return Opcode::or_b;
    case BinaryOp::bit_and: return Opcode::bitand_i;
    case BinaryOp::bit_or: return Opcode::bitor_i;
    case BinaryOp::bit_xor: return Opcode::bitxor_i;
    case BinaryOp::shl: return Opcode::shl_i;
    case BinaryOp::shr: return Opcode::shr_i;
  }
  throw std::logic_error("binary_opcode");
}

Opcode function_opcode(Function function, ValueType result, ValueType operand) {
  const bool f = result == ValueType::floating;
  switch (function) {
    case Function::abs: return f ? Opcode::abs_f : Opcode::abs_i;
    case Function::min: return f ? Opcode::min_f : Opcode::min_i;
    case Function::max: return f ? Opcode::max_f : Opcode::max_i;
    case Function::clamp: return f ? Opcode::clamp_f : Opcode::clamp_i;
    case Function::exp: return Opcode::exp_f;
    case Function::exp2: return Opcode::exp2_f;
    case Function::log: return Opcode::log_f;
    case Function::log2: return Opcode::log2_f;
    case Function::sqrt: return Opcode::sqrt_f;
    case Function::rsqrt: return Opcode::rsqrt_f;
    case Function::tanh: return Opcode::tanh_f;
    case Function::sigmoid: return Opcode::sigmoid_f;
    case Function::floor: return Opcode::floor_f;
    case Function::ceil: return Opcode::ceil_f;
    case Function::pow: return Opcode::pow_f;
    case Function::where: return Opcode::select;
    case Function::to_int:
      return operand == ValueType::floating  ? Opcode::f2i
             : operand == ValueType::boolean ? Opcode::b2i
                                             : Opcode::nop;
    case Function::to_float:
      return operand == ValueType::integer   ? Opcode::i2f
             : operand == ValueType::boolean ? Opcode::b2f
                                             : Opcode::nop;
  }
  throw std::logic_error("function_opcode");
}

bool is_rank1_int_read_at(const Node& node, Builtin at) {
  return node.kind == NodeKind::tensor_read && node.type == ValueType::integer &&
         node.children.size() == 1 && node.child(0).kind == NodeKind::builtin &&
         node.child(0).builtin() == at;
}

class Emitter {
 public:
  void emit(const Node& node) {
    Instr instr{Opcode::nop, 0, Value{0}};
    switch (node.kind) {
      case NodeKind::constant:
        instr.op = Opcode::push;
        if (node.type == ValueType::floating) {
          instr.imm.f = node.float_value;
        } else {
          instr.imm.i = node.int_value;
        }
        break;
      case NodeKind::builtin:
        instr.op = Opcode::load_builtin;
        instr.a = node.op;
        break;
      case NodeKind::param:
        instr.op = Opcode::load_param;
        instr.a = node.op;
        break;
      case NodeKind::tensor_read:
        instr.a = node.op;
        if (is_rank1_int_read_at(node, Builtin::q_idx)) {
          instr.op = Opcode::read_i32_at_q;
          break;
        }
        if (is_rank1_int_read_at(node, Builtin::kv_idx)) {
          instr.op = Opcode::read_i32_at_kv;
          break;
        }
        for (const auto& child : node.children) emit(*child);
        if (node.type == ValueType::integer) {
          instr.op = node.children.size() == 1 ? Opcode::read_i32_1 : Opcode::read_i32_2;
        } else {
          instr.op = node.children.size() == 1 ? Opcode::read_f32_1 : Opcode::read_f32_2;
        }
        break;
      case NodeKind::unary:
        emit(node.child(0));
        switch (node.unary_op()) {
          case UnaryOp::neg:
            instr.op = node.type == ValueType::floating ? Opcode::neg_f : Opcode::neg_i;
            break;
          case UnaryOp::logical_not: instr.op = Opcode::not_b; break;
          case UnaryOp::bit_not: instr.op = Opcode::bitnot_i; break;
        }
        break;
      case NodeKind::binary:
        emit(node.child(0));
        emit(node.child(1));
        instr.op = binary_opcode(node.binary_op(), node.child(0).type);
        break;
      case NodeKind::conditional:
        for (const auto& child : node.children) emit(*child);
        instr.op = Opcode::select;
        break;
      case NodeKind::function:
        for (const auto& child : node.children) emit(*child);
        instr.op = function_opcode(node.function(), node.type, node.child(0).type);
        break;
      case NodeKind::name:
      case NodeKind::call:
      case NodeKind::index:
      case NodeKind::error: throw std::logic_error("compile_program: unchecked node");
    }
    if (instr.op == Opcode::nop) return;  // the operand's bits are the result
    program_.code.push_back(instr);
    program_.types.push_back(node.type);
  }

  Program take() { return std::move(program_); }

 private:
  Program program_;
};

}  // namespace

int pops(Opcode op) {
  switch (op) {
    case Opcode::push:
    case Opcode::load_builtin:
    case Opcode::load_param:
    case Opcode::read_i32_at_q:
    case Opcode::read_i32_at_kv: return 0;
    case Opcode::read_i32_1:
    case Opcode::read_f32_1:
    case Opcode::neg_i:
    case Opcode::neg_f:
    case Opcode::not_b:
    case Opcode::bitnot_i:
    case Opcode::abs_i:
    case Opcode::abs_f:
    case Opcode::exp_f:
    case Opcode::exp2_f:
    case Opcode::log_f:
    case Opcode::log2_f:
    case Opcode::sqrt_f:
    case Opcode::rsqrt_f:
    case Opcode::tanh_f:
    case Opcode::sigmoid_f:
    case Opcode::floor_f:
    case Opcode::ceil_f:
    case Opcode::f2i:
    case Opcode::i2f:
    case Opcode::b2f:
    case Opcode::b2i:
    case Opcode::nop: return 1;
    case Opcode::select:
    case Opcode::clamp_i:
    case Opcode::clamp_f: return 3;
    default: return 2;
  }
}

Program compile_program(const Node& root) {
  Emitter emitter;
  emitter.emit(root);
  Program program = emitter.take();
  int depth = 0;
  for (const Instr& instr : program.code) {
    depth += 1 - pops(instr.op);
    if (instr.op == Opcode::push || instr.op == Opcode::load_builtin ||
        instr.op == Opcode::load_param || instr.op == Opcode::read_i32_at_q ||
        instr.op == Opcode::read_i32_at_kv) {
      program.max_stack = std::max(program.max_stack, depth);
    }
  }
  return program;
}

}  // namespace attnjit::expr
