// A checked AST flattened into post-order instructions for a small stack machine: the CPU
// evaluator, the constant folder and the host block analysis all run this form, so each
// evaluation is one pass over a flat array with no allocation.
#pragma once

#include <cstdint>
#include <vector>

#include "expr/ast.hpp"

namespace attnjit::expr {

// 32-bit value: bools are 0 / 1 in `i`.
union Value {
  std::int32_t i;
  float f;
};

enum class Opcode : std::uint8_t {
  push,          // imm
  load_builtin,  // a: Builtin, from the frame
  load_param,    // a: parameter index (raw 32 bits)
  read_i32_1, read_i32_2, read_f32_1, read_f32_2,  // a: tensor; indices popped
  read_i32_at_q, read_i32_at_kv,  // a: rank-1 int32 tensor read at exactly q_idx / kv_idx
  neg_i, neg_f, not_b, bitnot_i,
  add_i, sub_i, mul_i, div_i, mod_i,
  add_f, sub_f, mul_f, div_f,
  lt_i, le_i, gt_i, ge_i, eq_i, ne_i,
  lt_f, le_f, gt_f, ge_f, eq_f, ne_f,
  and_b, or_b, eq_b, ne_b,
  bitand_i, bitor_i, bitxor_i, shl_i, shr_i,
  select,  // pops condition, then, else
  abs_i, abs_f, min_i, min_f, max_i, max_f, clamp_i, clamp_f,
  exp_f, exp2_f, log_f, log2_f, sqrt_f, rsqrt_f, tanh_f, sigmoid_f, floor_f, ceil_f, pow_f,
  f2i, i2f, b2f, b2i,
  nop,  // conversions that keep the bits (int(int), float(float))
};

struct Instr {
  Opcode op;
  std::int32_t a;
  Value imm;
};

struct Program {
  std::vector<Instr> code;
  int max_stack = 0;
  // Type of each instruction's result, for the interval interpreter.
  std::vector<ValueType> types;
};

// The node must be type-checked and valid.
Program compile_program(const Node& root);

// Number of values an instruction pops.
int pops(Opcode op);

}  // namespace attnjit::expr
