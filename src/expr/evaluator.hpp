// The one evaluator of a Program, templated over its values: scalars (the CPU evaluator and the
// constant folder, expr/interpret.cpp) or intervals (the host block analysis,
// expr/block_analysis.cpp). The operators come from expr/operators.def through
// expr/operator_forms.hpp; a domain supplies what is not an operator:
//
//   struct Domain {
//     using Slot = ...;                                   // one stack entry
//     static Int get_int(const Slot&);   ... get_float, get_bool
//     static void put(Slot&, Int);       ... Float, Bool
//     template <class Row, class... A> static auto apply(A... a);  // Row::element / interval
//     Slot constant(const Instr&) const;                  // push
//     Slot builtin(Builtin) const;
//     Slot param(const Instr&) const;
//     Slot read_at(int tensor, SummaryAxis axis) const;   // doc[q_idx], doc[kv_idx]
//     Slot read(const Instr&, const Slot* indices) const; // any other read (rank from the opcode)
//     Slot select(ValueType, const Slot& c, const Slot& a, const Slot& b) const;
//   };
#pragma once

#include <stdexcept>

#include "expr/operator_forms.hpp"
#include "expr/program.hpp"

namespace attnjit::expr {
namespace evaluator_detail {

// Replaces args[0] by Row applied to args[0 .. N-1], read as `operand` values.
template <class D, class Row, int N>
void apply(ValueType operand, typename D::Slot* args) {
  const auto run = [args](auto get) {
    if constexpr (N == 1) {
      D::put(args[0], D::template apply<Row>(get(args[0])));
    } else if constexpr (N == 2) {
      D::put(args[0], D::template apply<Row>(get(args[0]), get(args[1])));
    } else {
      D::put(args[0], D::template apply<Row>(get(args[0]), get(args[1]), get(args[2])));
    }
  };
  // Note: only the operand types the row's rule admits are instantiated; the type checker
  // guarantees no other reaches here.
  switch (operand) {
    case ValueType::integer:
      if constexpr (accepts(Row::rule, ValueType::integer)) {
        return run([](const typename D::Slot& s) { return D::get_int(s); });
      }
      break;
    case ValueType::floating:
      if constexpr (accepts(Row::rule, ValueType::floating)) {
        return run([](const typename D::Slot& s) { return D::get_float(s); });
      }
      break;
    case ValueType::boolean:
      if constexpr (accepts(Row::rule, ValueType::boolean)) {
        return run([](const typename D::Slot& s) { return D::get_bool(s); });
      }
      break;
  }
  throw std::logic_error("evaluate: operator applied to operands its rule does not admit");
}

template <class D>
void convert(ValueType from, ValueType to, typename D::Slot& slot) {
#define ATTNJIT_CONVERSION(FROM, TO, ELEMENT_FORM, IV_FORM)                             \
  if (from == ValueType::FROM && to == ValueType::TO) {                                 \
    constexpr ValueType kFrom = ValueType::FROM;                                        \
    if constexpr (kFrom == ValueType::integer) {                                        \
      return D::put(slot, D::template apply<forms::FROM##_to_##TO##_row>(D::get_int(slot)));   \
    } else if constexpr (kFrom == ValueType::floating) {                                \
      return D::put(slot, D::template apply<forms::FROM##_to_##TO##_row>(D::get_float(slot))); \
    } else {                                                                            \
      return D::put(slot, D::template apply<forms::FROM##_to_##TO##_row>(D::get_bool(slot)));  \
    }                                                                                   \
  }
#include "expr/operators.def"
  throw std::logic_error("evaluate: no such conversion");
}

}  // namespace evaluator_detail

// `stack` holds at least program.max_stack slots.
template <class D>
typename D::Slot evaluate(const Program& program, const D& domain, typename D::Slot* stack) {
  using evaluator_detail::apply;
  int sp = 0;  // number of values on the stack
  for (const Instr& in : program.code) {
    typename D::Slot* top = stack + sp;  // one past the top
    switch (in.op) {
      case Opcode::push: stack[sp++] = domain.constant(in); break;
      case Opcode::load_builtin: stack[sp++] = domain.builtin(static_cast<Builtin>(in.a)); break;
      case Opcode::load_param: stack[sp++] = domain.param(in); break;
      case Opcode::read_at_q: stack[sp++] = domain.read_at(in.a, SummaryAxis::q); break;
      case Opcode::read_at_kv: stack[sp++] = domain.read_at(in.a, SummaryAxis::kv); break;
      case Opcode::read_1: top[-1] = domain.read(in, top - 1); break;
      case Opcode::read_2:
        top[-2] = domain.read(in, top - 2);
        --sp;
        break;
      case Opcode::select:
        top[-3] = domain.select(in.type, top[-3], top[-2], top[-1]);
        sp -= 2;
        break;
      case Opcode::convert: evaluator_detail::convert<D>(in.operand, in.type, top[-1]); break;
#define ATTNJIT_UNARY(ID, ...)                                  \
  case Opcode::ID:                                              \
    apply<D, forms::ID##_row, 1>(in.operand, top - 1);          \
    break;
#define ATTNJIT_BINARY(ID, ...)                                 \
  case Opcode::ID:                                              \
    apply<D, forms::ID##_row, 2>(in.operand, top - 2);          \
    --sp;                                                       \
    break;
#define ATTNJIT_FUNCTION(ID, SPELLING, ARITY, ...)              \
  case Opcode::ID:                                              \
    apply<D, forms::ID##_row, ARITY>(in.operand, top - ARITY);  \
    sp -= ARITY - 1;                                            \
    break;
#include "expr/operators.def"
    }
  }
  return stack[0];
}

}  // namespace attnjit::expr
