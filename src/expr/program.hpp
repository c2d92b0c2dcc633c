// A checked AST flattened into post-order instructions for a small stack machine: the CPU
// evaluator, the constant folder and the host block analysis all run this form (one evaluator,
// expr/evaluator.hpp, over scalar or interval values), so each evaluation is one pass over a
// flat array with no allocation.
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
  read_at_q,     // a: rank-1 int32 tensor read at exactly q_idx (summarised by the block analysis)
  read_at_kv,    // a: the same at kv_idx
  read_1,        // a: tensor; the index popped
  read_2,        // a: tensor; two indices popped
  select,        // pops condition, then, else
  convert,       // from `operand` to `type` (expr/operators.def's conversion rows)
  // One per operator and function row of expr/operators.def, on operands of type `operand`.
#define ATTNJIT_UNARY(ID, ...) ID,
#define ATTNJIT_BINARY(ID, ...) ID,
#define ATTNJIT_FUNCTION(ID, ...) ID,
#include "expr/operators.def"
};

struct Instr {
  Opcode op;
  ValueType type;     // of the result
  ValueType operand;  // of the operands, for operators and conversions
  std::int32_t a;
  Value imm;
};

enum class SummaryAxis { q, kv };

// A rank-1 int32 tensor that the program reads at exactly q_idx or kv_idx: a per-tile min/max
// summary of it lets the block analysis classify such tiles exactly.
struct SummaryRequest {
  int tensor;  // index in the signature
  SummaryAxis axis;
};

struct Program {
  std::vector<Instr> code;
  int max_stack = 0;
  // Sorted by tensor, then axis; each once.
  std::vector<SummaryRequest> summary_requests;
};

// The node must be type-checked and valid.
Program compile_program(const Node& root);

// Number of values an instruction pops.
int pops(Opcode op);

}  // namespace attnjit::expr
