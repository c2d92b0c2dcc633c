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
//
// With the row shift (KernelConfig::score_row_shift), the terms of the score's top-level sum
// that do not read the score and are a per-row value plus a block-level multiple of kv_idx
// (ALiBi's slope * float(kv_idx - q_idx); a per-row or per-block bias) leave the core:
//   core(qk) + key_slope * kv_idx + row(q_idx)
// is evaluated as core(qk) + key_slope * (kv_idx - key_base) per element, where kv_idx -
// key_base is a constant of the register (the kernel's accumulator layout), so ALiBi's element
// costs one FFMA, and row_shift(q_idx, key_base) = key_slope * key_base + row(q_idx) once per
// row and key tile, which the softmax adds to the row's max and exponent (OnlineSoftmax). The
// softmax's and the LSE's values are the score's; only where the additions happen moves. A
// distance float(kv_idx - q_idx) is converted as key_base - q_idx, one integer difference, so
// large indices lose nothing the unshifted form keeps.
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
  // Whether `factor` is made of literals alone (soft-capping written `30 * tanh(score / 30)`):
  // its code then goes through ops::runtime_f (expr_ops.cuh, which says why).
  bool factor_is_literal = false;
  std::string core;    // element code over `qk` (the raw Q K^T product) and the hoisted values
  // The nodes whose inputs (parameters, tensors, indices) the constants' code and the core's
  // code read outside hoisted values, for their declarations (declare_element_inputs).
  std::vector<const expr::Node*> constant_reads;
  std::vector<const expr::Node*> core_reads;
  HoistedNames core_names;  // what the core's reads are lowered against
  // The row shift (see the header); `row_shift` empty: none, the core is the whole score.
  // key_slope: a member of the constants, or empty where no term reads kv_idx. row_shift: code
  // over the constants, the row's hoisted values, q_idx and key_base, in the core's units.
  std::string key_slope;
  std::string row_shift;
  std::vector<const expr::Node*> shift_reads;
};

// What factor_score needs to know about the hoisting (codegen/lower_hooks.cpp): which nodes
// change only per block, and the names and reciprocals already hoisted.
struct ScoreHoisting {
  std::function<bool(const expr::Node&)> is_block_level;
  const HoistedNames* names = nullptr;
  std::function<bool(const expr::Node&)> is_row_level;  // reads q_idx, not kv_idx or the score
  // x / d with d per row or column: d's hoisted reciprocal, by the division node.
  const HoistedNames* reciprocals = nullptr;
};

// `row_shift`: move the shiftable terms out of the core where there are any (see the header).
FactoredScore factor_score(const expr::Expression& score, const ScoreHoisting& hoisting,
                           bool row_shift = false);

}  // namespace attnjit::codegen
