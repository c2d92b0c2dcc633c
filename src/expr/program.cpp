#include "expr/program.hpp"

#include <algorithm>
#include <stdexcept>

#include "expr/operators.hpp"

namespace attnjit::expr {
namespace {

Opcode opcode(UnaryOp op) {
  switch (op) {
#define ATTNJIT_UNARY(ID, ...) \
  case UnaryOp::ID: return Opcode::ID;
#include "expr/operators.def"
  }
  throw std::logic_error("opcode: unknown unary operator");
}

Opcode opcode(BinaryOp op) {
  switch (op) {
#define ATTNJIT_BINARY(ID, ...) \
  case BinaryOp::ID: return Opcode::ID;
#include "expr/operators.def"
  }
  throw std::logic_error("opcode: unknown binary operator");
}

Opcode opcode(Function function) {
  switch (function) {
#define ATTNJIT_FUNCTION(ID, ...) \
  case Function::ID: return Opcode::ID;
#include "expr/operators.def"
  }
  throw std::logic_error("opcode: unknown function");
}

class Emitter {
 public:
  void emit(const Node& node) {
    Instr instr{Opcode::push, node.type, node.type, 0, Value{0}};
    switch (node.kind) {
      case NodeKind::constant:
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
          instr.op = Opcode::read_at_q;
          break;
        }
        if (is_rank1_int_read_at(node, Builtin::kv_idx)) {
          instr.op = Opcode::read_at_kv;
          break;
        }
        for (const auto& child : node.children) emit(*child);
        instr.op = node.children.size() == 1 ? Opcode::read_1 : Opcode::read_2;
        break;
      case NodeKind::unary:
        emit(node.child(0));
        instr.op = opcode(node.unary_op());
        instr.operand = node.child(0).type;
        break;
      case NodeKind::binary:
        emit(node.child(0));
        emit(node.child(1));
        instr.op = opcode(node.binary_op());
        instr.operand = node.child(0).type;
        break;
      case NodeKind::conditional:
        for (const auto& child : node.children) emit(*child);
        instr.op = Opcode::select;
        break;
      case NodeKind::function:
        for (const auto& child : node.children) emit(*child);
        instr.operand = node.child(0).type;
        if (function_info(node.function()).rule == OperandRule::convert) {
          if (instr.operand == node.type) return;  // the operand's bits are the result
          instr.op = Opcode::convert;
        } else {
          instr.op = opcode(node.function());
        }
        break;
      case NodeKind::name:
      case NodeKind::call:
      case NodeKind::index:
      case NodeKind::error: throw std::logic_error("compile_program: unchecked node");
    }
    program_.code.push_back(instr);
  }

  Program take() { return std::move(program_); }

 private:
  Program program_;
};

std::vector<SummaryRequest> find_summary_requests(const Program& program) {
  std::vector<SummaryRequest> requests;
  for (const Instr& in : program.code) {
    if (in.op != Opcode::read_at_q && in.op != Opcode::read_at_kv) continue;
    const SummaryRequest request{in.a, in.op == Opcode::read_at_q ? SummaryAxis::q : SummaryAxis::kv};
    const bool seen = std::any_of(requests.begin(), requests.end(), [&](const SummaryRequest& r) {
      return r.tensor == request.tensor && r.axis == request.axis;
    });
    if (!seen) requests.push_back(request);
  }
  std::sort(requests.begin(), requests.end(), [](const SummaryRequest& a, const SummaryRequest& b) {
    return a.tensor != b.tensor ? a.tensor < b.tensor : a.axis < b.axis;
  });
  return requests;
}

}  // namespace

int pops(Opcode op) {
  switch (op) {
    case Opcode::push:
    case Opcode::load_builtin:
    case Opcode::load_param:
    case Opcode::read_at_q:
    case Opcode::read_at_kv: return 0;
    case Opcode::read_1:
    case Opcode::convert: return 1;
    case Opcode::read_2: return 2;
    case Opcode::select: return 3;
#define ATTNJIT_UNARY(ID, ...) \
  case Opcode::ID: return 1;
#define ATTNJIT_BINARY(ID, ...) \
  case Opcode::ID: return 2;
#define ATTNJIT_FUNCTION(ID, SPELLING, ARITY, ...) \
  case Opcode::ID: return ARITY;
#include "expr/operators.def"
  }
  throw std::logic_error("pops: unknown opcode");
}

Program compile_program(const Node& root) {
  Emitter emitter;
  emitter.emit(root);
  Program program = emitter.take();
  int depth = 0;
  for (const Instr& instr : program.code) {
    depth += 1 - pops(instr.op);
    program.max_stack = std::max(program.max_stack, depth);
  }
  program.summary_requests = find_summary_requests(program);
  return program;
}

}  // namespace attnjit::expr
