// The score hook as the kernel evaluates it: a per-block factor times a cheaper core.
//
// The kernel needs log2(e) * score(qk * scale) for each element (qk: the raw Q K^T product; the
// exponent is base 2). Written as it reads, that is an FMUL for the scale, the expression, and an
// FMUL for log2(e); soft-capping, cap * tanh(score / cap), costs four FMUL around its tanh. But
// multiplications by values that change only per block can be gathered into one factor:
//   log2(e) * cap * tanh((qk * scale) / cap)  ==  F * tanh(qk * C),
//   F = log2(e) * cap,  C = scale / cap,
// and the kernel folds a positive F into the exponent's FFMA (the scale fold of the noop
// kernel), so the element costs one FMUL and the tanh. ALiBi,
// qk * scale + slope * (kv - q), becomes F * (qk + (kv - q) * (slope / scale)) with
// F = log2(e) * scale: the column and row conversions are hoisted, the rest is one FSUB and one
// FFMA. The factored form equals the expression up to float rounding (a few ulp), which the
// bf16/fp16 tolerances absorb; the CPU reference evaluates the expression as written.
//
// factor_score rewrites: score -> F = scale, core = qk; a * b and a / b with a block-level side
// -> that side joins F; a + b and a - b -> F of the score's side, the other side's core scaled
// by the ratio of the factors; -a -> -core. Anything else (functions, conditionals, comparisons)
// keeps F = 1 and evaluates its score-reading operands as F * core.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/lower_expr.hpp"
#include "expr/expression.hpp"

namespace attnjit::codegen {

// The per-block values the core reads ("score_constants.c0", ...) and the factor; the code of
// each may read the block's hoisted values, the parameters and `scale`.
struct ScoreConstant {
  std::string member;
  std::string code;
};

struct FactoredScore {
  std::vector<ScoreConstant> constants;
  std::string factor;  // block-level code, log2(e) included
  std::string core;    // element code over `qk` (the raw Q K^T product) and the hoisted values
  // The nodes whose inputs (parameters, tensors, indices) the constants' code and the core's
  // code read outside hoisted values, for their declarations (declare_element_inputs).
  std::vector<const expr::Node*> constant_reads;
  std::vector<const expr::Node*> core_reads;
  HoistedNames core_names;  // what the core's reads are lowered against
};

// What factor_score needs to know about the hoisting (codegen/lower_hooks.cpp): which nodes
// change only per block, and the names and reciprocals already hoisted.
struct ScoreHoisting {
  std::function<bool(const expr::Node&)> is_block_level;
  const HoistedNames* names = nullptr;
  // x / d with d per row or column: d's hoisted reciprocal, by the division node.
  const HoistedNames* reciprocals = nullptr;
};

FactoredScore factor_score(const expr::Expression& score, const ScoreHoisting& hoisting);

}  // namespace attnjit::codegen
