// Scalar and interval semantics of the expression language, shared by the host (evaluator,
// constant folding, block analysis) and the lowered device code, so that the CPU reference and
// the GPU kernels agree by construction.
//
// Integer semantics are total: + - * wrap around (computed in unsigned), x/0 == 0, x%0 == 0,
// INT_MIN/-1 == INT_MIN, INT_MIN%-1 == 0, shift counts are taken mod 32, << shifts the unsigned
// bits and >> is arithmetic, int(float) maps NaN to 0, saturates and truncates toward zero.
// Tensor reads are bounds-checked: an out-of-range index reads 0.
//
// Note: NVRTC compiles this file with no standard or toolkit header; device builds use the
// built-in math functions only.
#pragma once

#include "attnjit/bit_cast.cuh"
#include "attnjit/grid_dependency.cuh"
#include "attnjit/hd.cuh"
#include "attnjit/numeric.cuh"
#include "attnjit/tile.cuh"
#include "attnjit/variant_args.cuh"

#if !ATTNJIT_DEVICE_COMPILE
#include <cmath>
#endif

namespace attnjit {
namespace ops {

constexpr int kIntMin = -2147483647 - 1;
constexpr int kIntMax = 2147483647;

// ---------------------------------------------------------------------------------------------
// Bit casts and special values

// Signed, as the language's int(bits) reads them.
ATTNJIT_HD float bits_to_float(int bits) { return bits_float(static_cast<unsigned>(bits)); }
ATTNJIT_HD int float_to_bits(float value) { return static_cast<int>(float_bits(value)); }

ATTNJIT_HD float inf_f() { return bits_to_float(0x7f800000); }
ATTNJIT_HD float nan_f() { return bits_to_float(0x7fc00000); }
ATTNJIT_HD bool is_nan_f(float x) { return x != x; }

// ---------------------------------------------------------------------------------------------
// Integer scalars

ATTNJIT_HD int wrap_i(unsigned bits) { return static_cast<int>(bits); }
ATTNJIT_HD int add_i(int a, int b) {
  return wrap_i(static_cast<unsigned>(a) + static_cast<unsigned>(b));
}
ATTNJIT_HD int sub_i(int a, int b) {
  return wrap_i(static_cast<unsigned>(a) - static_cast<unsigned>(b));
}
ATTNJIT_HD int mul_i(int a, int b) {
  return wrap_i(static_cast<unsigned>(a) * static_cast<unsigned>(b));
}
ATTNJIT_HD int neg_i(int a) { return wrap_i(0u - static_cast<unsigned>(a)); }
ATTNJIT_HD int div_i(int a, int b) {
  if (b == 0) return 0;
  if (b == -1) return neg_i(a);  // INT_MIN / -1 == INT_MIN
  return a / b;
}
ATTNJIT_HD int mod_i(int a, int b) {
  if (b == 0 || b == -1) return 0;
  return a % b;
}
ATTNJIT_HD int shl_i(int a, int b) { return wrap_i(static_cast<unsigned>(a) << (b & 31)); }
ATTNJIT_HD int shr_i(int a, int b) { return a >> (b & 31); }
ATTNJIT_HD int abs_i(int a) { return a < 0 ? neg_i(a) : a; }
ATTNJIT_HD int min_i(int a, int b) { return a < b ? a : b; }
ATTNJIT_HD int max_i(int a, int b) { return a > b ? a : b; }
ATTNJIT_HD int clamp_i(int x, int lo, int hi) { return min_i(max_i(x, lo), hi); }

// int(float): NaN -> 0, saturating, truncation toward zero.
ATTNJIT_HD int f2i(float x) {
  if (is_nan_f(x)) return 0;
  if (x >= 2147483648.0f) return kIntMax;
  if (x <= -2147483648.0f) return kIntMin;
  return static_cast<int>(x);
}
ATTNJIT_HD float i2f(int a) { return static_cast<float>(a); }

// ---------------------------------------------------------------------------------------------
// Float scalars (fp32 throughout)

#if ATTNJIT_DEVICE_COMPILE
ATTNJIT_HD float abs_f(float x) { return fabsf(x); }
ATTNJIT_HD float min_f(float a, float b) { return fminf(a, b); }
ATTNJIT_HD float max_f(float a, float b) { return fmaxf(a, b); }
ATTNJIT_HD float exp_f(float x) { return expf(x); }
ATTNJIT_HD float exp2_f(float x) { return exp2f(x); }
ATTNJIT_HD float log_f(float x) { return logf(x); }
ATTNJIT_HD float log2_f(float x) { return log2f(x); }
ATTNJIT_HD float sqrt_f(float x) { return sqrtf(x); }
ATTNJIT_HD float rsqrt_f(float x) { return rsqrtf(x); }
ATTNJIT_HD float tanh_f(float x) { return tanhf(x); }
ATTNJIT_HD float floor_f(float x) { return floorf(x); }
ATTNJIT_HD float ceil_f(float x) { return ceilf(x); }
ATTNJIT_HD float pow_f(float x, float y) { return powf(x, y); }
#else
ATTNJIT_HD float abs_f(float x) { return std::fabs(x); }
ATTNJIT_HD float min_f(float a, float b) { return std::fmin(a, b); }
ATTNJIT_HD float max_f(float a, float b) { return std::fmax(a, b); }
ATTNJIT_HD float exp_f(float x) { return std::exp(x); }
ATTNJIT_HD float exp2_f(float x) { return std::exp2(x); }
ATTNJIT_HD float log_f(float x) { return std::log(x); }
ATTNJIT_HD float log2_f(float x) { return std::log2(x); }
ATTNJIT_HD float sqrt_f(float x) { return std::sqrt(x); }
ATTNJIT_HD float rsqrt_f(float x) { return 1.0f / std::sqrt(x); }
ATTNJIT_HD float tanh_f(float x) { return std::tanh(x); }
ATTNJIT_HD float floor_f(float x) { return std::floor(x); }
ATTNJIT_HD float ceil_f(float x) { return std::ceil(x); }
ATTNJIT_HD float pow_f(float x, float y) { return std::pow(x, y); }
#endif
ATTNJIT_HD float clamp_f(float x, float lo, float hi) { return min_f(max_f(x, lo), hi); }

// `x`, as a value the device compiler cannot see through: the factored score's factor
// (codegen/factor_score.hpp), so that a score written with literals (`30 * tanh(score / 30)`)
// compiles to the kernel its parameter form (`cap * tanh(score / cap)`) does. With the factor
// known at compile time the kernel's fold test was decided there, and the code ptxas then
// scheduled for the sm90 kernel's 128 x 176 tiles at head dim 128 spilled 196 bytes, where the
// parameter form, the one kernel_resources_test checks, spills none.
// Note: a multiply by a 1 in constant memory, which neither NVVM (the variable may be written
// from the host) nor ptxas (a c[][] operand) folds; a mov in inline asm does not do: ptxas
// propagates its immediate.
#if ATTNJIT_DEVICE_COMPILE && defined(__CUDA_ARCH__)
__constant__ float runtime_one = 1.0f;
ATTNJIT_HD float runtime_f(float x) { return x * runtime_one; }
#else
ATTNJIT_HD float runtime_f(float x) { return x; }
#endif
ATTNJIT_HD float sigmoid_f(float x) { return 1.0f / (1.0f + exp_f(-x)); }

// Fast forms for score expressions (lower_expr.hpp, ElementOptions::fast_math): one MUFU
// instruction each instead of a libm sequence. Accuracy (PTX ISA, sm_80+): ex2.approx relative
// error about 2^-22 (so exp: about 2^-22 + |x| * 2^-24 from the scaling); lg2.approx absolute
// error about 2^-22; tanh.approx relative error about 2^-11, i.e. `cap * tanh(score / cap)` is
// off by at most cap * 2^-11 in the logit, the approximation FlashAttention's soft-capping uses;
// float division: div.full.f32, at most 2 ulp.
// The host build (CPU backend, reference, emulator) uses the precise functions.
#if ATTNJIT_DEVICE_COMPILE
ATTNJIT_HD float fast_div_f(float a, float b) { return fast_divide(a, b); }
ATTNJIT_HD float fast_exp2_f(float x) { return fast_exp2(x); }
ATTNJIT_HD float fast_log2_f(float x) { return fast_log2(x); }
ATTNJIT_HD float fast_tanh_f(float x) { return fast_tanh(x); }
ATTNJIT_HD float fast_exp_f(float x) { return fast_exp2(x * 1.4426950408889634f); }
ATTNJIT_HD float fast_log_f(float x) { return fast_log2(x) * 0.6931471805599453f; }
ATTNJIT_HD float fast_sigmoid_f(float x) {
  return fast_reciprocal(1.0f + fast_exp2(x * -1.4426950408889634f));
}
#else
ATTNJIT_HD float fast_div_f(float a, float b) { return a / b; }
ATTNJIT_HD float fast_exp2_f(float x) { return exp2_f(x); }
ATTNJIT_HD float fast_log2_f(float x) { return log2_f(x); }
ATTNJIT_HD float fast_tanh_f(float x) { return tanh_f(x); }
ATTNJIT_HD float fast_exp_f(float x) { return exp_f(x); }
ATTNJIT_HD float fast_log_f(float x) { return log_f(x); }
ATTNJIT_HD float fast_sigmoid_f(float x) { return sigmoid_f(x); }
#endif

// ---------------------------------------------------------------------------------------------
// Bounds-checked tensor reads (row-major, dims[0] x dims[1]); out of range reads 0.

ATTNJIT_HD bool in_bounds(const TensorArg& t, int i, int j) {
  return t.data != nullptr && i >= 0 && i < t.dims[0] && j >= 0 && j < t.dims[1];
}
ATTNJIT_HD long long flat_index(const TensorArg& t, int i, int j) {
  return static_cast<long long>(i) * t.dims[1] + j;
}
ATTNJIT_HD int read_i32(const TensorArg& t, int i) {
  return (t.data != nullptr && i >= 0 && i < t.dims[0]) ? static_cast<const int*>(t.data)[i] : 0;
}
ATTNJIT_HD int read_i32(const TensorArg& t, int i, int j) {
  return in_bounds(t, i, j) ? static_cast<const int*>(t.data)[flat_index(t, i, j)] : 0;
}
ATTNJIT_HD float read_f32(const TensorArg& t, int i) {
  return (t.data != nullptr && i >= 0 && i < t.dims[0]) ? static_cast<const float*>(t.data)[i]
                                                         : 0.0f;
}
ATTNJIT_HD float read_f32(const TensorArg& t, int i, int j) {
  return in_bounds(t, i, j) ? static_cast<const float*>(t.data)[flat_index(t, i, j)] : 0.0f;
}

// ---------------------------------------------------------------------------------------------
// Three-valued booleans: which values an expression may take over a tile.

struct Tri {
  bool may_false;
  bool may_true;
};

ATTNJIT_HD Tri tri(bool value) { return Tri{!value, value}; }
ATTNJIT_HD Tri tri_unknown() { return Tri{true, true}; }
ATTNJIT_HD Tri tri_and(Tri a, Tri b) { return Tri{a.may_false || b.may_false, a.may_true && b.may_true}; }
ATTNJIT_HD Tri tri_or(Tri a, Tri b) { return Tri{a.may_false && b.may_false, a.may_true || b.may_true}; }
ATTNJIT_HD Tri tri_not(Tri a) { return Tri{a.may_true, a.may_false}; }
ATTNJIT_HD Tri tri_eq(Tri a, Tri b) {
  return Tri{(a.may_true && b.may_false) || (a.may_false && b.may_true),
             (a.may_true && b.may_true) || (a.may_false && b.may_false)};
}
ATTNJIT_HD Tri tri_ne(Tri a, Tri b) { return tri_not(tri_eq(a, b)); }
ATTNJIT_HD Tri tri_join(Tri a, Tri b) { return Tri{a.may_false || b.may_false, a.may_true || b.may_true}; }

ATTNJIT_HD TileClass tile_class(Tri mask) {
  if (!mask.may_true) return kTileEmpty;
  if (!mask.may_false) return kTileFull;
  return kTilePartial;
}

// ---------------------------------------------------------------------------------------------
// Integer intervals [lo, hi]; computed in 64 bits and widened to the full int32 range whenever
// the wrap-around semantics could make the exact 64-bit answer wrong.

struct IntIv {
  int lo;
  int hi;
};

ATTNJIT_HD IntIv iv_int(int value) { return IntIv{value, value}; }
ATTNJIT_HD IntIv iv_int_range(int lo, int hi) { return IntIv{lo, hi}; }
ATTNJIT_HD IntIv iv_int_full() { return IntIv{kIntMin, kIntMax}; }
// Half-open [begin, end) as a closed interval; an empty range cannot occur for a non-empty tile.
ATTNJIT_HD IntIv iv_span(int begin, int end) { return IntIv{begin, end > begin ? end - 1 : begin}; }
ATTNJIT_HD IntIv iv_from_i64(long long lo, long long hi) {
  if (lo < kIntMin || hi > kIntMax) return iv_int_full();
  return IntIv{static_cast<int>(lo), static_cast<int>(hi)};
}
ATTNJIT_HD bool iv_is_const(IntIv a) { return a.lo == a.hi; }
ATTNJIT_HD IntIv iv_join(IntIv a, IntIv b) {
  return IntIv{a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
}
ATTNJIT_HD long long min_ll(long long a, long long b) { return a < b ? a : b; }
ATTNJIT_HD long long max_ll(long long a, long long b) { return a > b ? a : b; }
ATTNJIT_HD long long abs_ll(long long a) { return a < 0 ? -a : a; }

ATTNJIT_HD IntIv iv_add(IntIv a, IntIv b) {
  return iv_from_i64(static_cast<long long>(a.lo) + b.lo, static_cast<long long>(a.hi) + b.hi);
}
ATTNJIT_HD IntIv iv_sub(IntIv a, IntIv b) {
  return iv_from_i64(static_cast<long long>(a.lo) - b.hi, static_cast<long long>(a.hi) - b.lo);
}
ATTNJIT_HD IntIv iv_neg(IntIv a) {
  return iv_from_i64(-static_cast<long long>(a.hi), -static_cast<long long>(a.lo));
}
ATTNJIT_HD IntIv iv_corners(long long c0, long long c1, long long c2, long long c3) {
  return iv_from_i64(min_ll(min_ll(c0, c1), min_ll(c2, c3)), max_ll(max_ll(c0, c1), max_ll(c2, c3)));
}
ATTNJIT_HD IntIv iv_mul(IntIv a, IntIv b) {
  const long long alo = a.lo, ahi = a.hi, blo = b.lo, bhi = b.hi;
  return iv_corners(alo * blo, alo * bhi, ahi * blo, ahi * bhi);
}

// Truncating division over a divisor range of one sign: the extremes lie at the corners.
ATTNJIT_HD void iv_div_part(IntIv a, long long blo, long long bhi, long long& lo, long long& hi) {
  const long long c0 = a.lo / blo, c1 = a.lo / bhi, c2 = a.hi / blo, c3 = a.hi / bhi;
  lo = min_ll(lo, min_ll(min_ll(c0, c1), min_ll(c2, c3)));
  hi = max_ll(hi, max_ll(max_ll(c0, c1), max_ll(c2, c3)));
}
ATTNJIT_HD IntIv iv_div(IntIv a, IntIv b) {
  long long lo = 0x7fffffffffffffffLL, hi = -0x7fffffffffffffffLL;
  if (b.lo <= 0 && b.hi >= 0) lo = hi = 0;  // x / 0 == 0
  if (b.lo < 0) iv_div_part(a, b.lo, min_ll(b.hi, -1), lo, hi);
  if (b.hi > 0) iv_div_part(a, max_ll(b.lo, 1), b.hi, lo, hi);
  return iv_from_i64(lo, hi);  // INT_MIN / -1 (2^31 here) widens to the full range
}
ATTNJIT_HD IntIv iv_mod(IntIv a, IntIv b) {
  if (iv_is_const(b) && b.lo != 0) {
    const long long m = abs_ll(b.lo);
    if (m == 1) return iv_int(0);
    // Within one run of equal quotients the remainder grows with the dividend.
    if ((a.lo >= 0 || a.hi <= 0) && a.lo / m == a.hi / m) {
      return iv_from_i64(a.lo % m, a.hi % m);
    }
  }
  long long m = max_ll(abs_ll(b.lo), abs_ll(b.hi)) - 1;  // |a % b| < |b|
  if (m < 0) m = 0;
  const long long lo = a.lo < 0 ? -min_ll(m, -static_cast<long long>(a.lo)) : 0;
  const long long hi = a.hi > 0 ? min_ll(m, a.hi) : 0;
  return iv_from_i64(lo, hi);
}
// Smallest 2^k - 1 >= x for x >= 0.
ATTNJIT_HD int iv_ones_above(int x) {
  unsigned v = static_cast<unsigned>(x);
  v |= v >> 1;
  v |= v >> 2;
  v |= v >> 4;
  v |= v >> 8;
  v |= v >> 16;
  return static_cast<int>(v);
}
ATTNJIT_HD IntIv iv_bitand(IntIv a, IntIv b) {
  if (iv_is_const(a) && iv_is_const(b)) return iv_int(a.lo & b.lo);
  if (a.lo >= 0 && b.lo >= 0) return IntIv{0, min_i(a.hi, b.hi)};
  if (a.lo >= 0) return IntIv{0, a.hi};
  if (b.lo >= 0) return IntIv{0, b.hi};
  return iv_int_full();
}
ATTNJIT_HD IntIv iv_bitor(IntIv a, IntIv b) {
  if (iv_is_const(a) && iv_is_const(b)) return iv_int(a.lo | b.lo);
  if (a.lo >= 0 && b.lo >= 0) return IntIv{max_i(a.lo, b.lo), iv_ones_above(max_i(a.hi, b.hi))};
  return iv_int_full();
}
ATTNJIT_HD IntIv iv_bitxor(IntIv a, IntIv b) {
  if (iv_is_const(a) && iv_is_const(b)) return iv_int(a.lo ^ b.lo);
  if (a.lo >= 0 && b.lo >= 0) return IntIv{0, iv_ones_above(max_i(a.hi, b.hi))};
  return iv_int_full();
}
ATTNJIT_HD IntIv iv_bitnot(IntIv a) { return IntIv{~a.hi, ~a.lo}; }
ATTNJIT_HD IntIv iv_shl(IntIv a, IntIv b) {
  int slo = 0, shi = 31;
  if (iv_is_const(b)) {
    slo = shi = b.lo & 31;
  } else if (b.lo >= 0 && b.hi <= 31) {
    slo = b.lo;
    shi = b.hi;
  }
  // Exact when no bit leaves the int32 range; a left shift is then a multiplication.
  const long long plo = 1LL << slo, phi = 1LL << shi;
  return iv_corners(a.lo * plo, a.lo * phi, a.hi * plo, a.hi * phi);
}
ATTNJIT_HD IntIv iv_shr(IntIv a, IntIv b) {
  int slo = 0, shi = 31;
  if (iv_is_const(b)) {
    slo = shi = b.lo & 31;
  } else if (b.lo >= 0 && b.hi <= 31) {
    slo = b.lo;
    shi = b.hi;
  }
  return iv_corners(a.lo >> slo, a.lo >> shi, a.hi >> slo, a.hi >> shi);
}
ATTNJIT_HD IntIv iv_abs(IntIv a) {
  if (a.lo >= 0) return a;
  if (a.lo == kIntMin) return iv_int_full();  // abs(INT_MIN) == INT_MIN
  if (a.hi <= 0) return IntIv{-a.hi, -a.lo};
  return IntIv{0, max_i(-a.lo, a.hi)};
}
ATTNJIT_HD IntIv iv_min(IntIv a, IntIv b) { return IntIv{min_i(a.lo, b.lo), min_i(a.hi, b.hi)}; }
ATTNJIT_HD IntIv iv_max(IntIv a, IntIv b) { return IntIv{max_i(a.lo, b.lo), max_i(a.hi, b.hi)}; }
ATTNJIT_HD IntIv iv_clamp(IntIv x, IntIv lo, IntIv hi) { return iv_min(iv_max(x, lo), hi); }

ATTNJIT_HD Tri iv_lt(IntIv a, IntIv b) {
  if (a.hi < b.lo) return tri(true);
  if (a.lo >= b.hi) return tri(false);
  return tri_unknown();
}
ATTNJIT_HD Tri iv_le(IntIv a, IntIv b) {
  if (a.hi <= b.lo) return tri(true);
  if (a.lo > b.hi) return tri(false);
  return tri_unknown();
}
ATTNJIT_HD Tri iv_gt(IntIv a, IntIv b) { return iv_lt(b, a); }
ATTNJIT_HD Tri iv_ge(IntIv a, IntIv b) { return iv_le(b, a); }
ATTNJIT_HD Tri iv_eq(IntIv a, IntIv b) {
  if (iv_is_const(a) && iv_is_const(b) && a.lo == b.lo) return tri(true);
  if (a.hi < b.lo || b.hi < a.lo) return tri(false);
  return tri_unknown();
}
ATTNJIT_HD Tri iv_ne(IntIv a, IntIv b) { return tri_not(iv_eq(a, b)); }

// bool -> int as int(): 0 or 1.
ATTNJIT_HD IntIv iv_tri_to_int(Tri a) { return IntIv{a.may_false ? 0 : 1, a.may_true ? 1 : 0}; }

// ---------------------------------------------------------------------------------------------
// Float intervals: [lo, hi] bounds the non-NaN values; `nan` says NaN is possible. Bounds are
// widened outward by a few ulps after every rounded operation so that rounding differences
// between the host and the device (and between libm and CUDA's math library) stay sound.

struct FloatIv {
  float lo;
  float hi;
  bool nan;
};

constexpr int kArithUlps = 2;
constexpr int kMathUlps = 8;
constexpr float kMinNormal = 1.17549435e-38f;

ATTNJIT_HD FloatIv iv_float_full() { return FloatIv{-inf_f(), inf_f(), true}; }
ATTNJIT_HD FloatIv iv_float(float value) {
  if (is_nan_f(value)) return iv_float_full();
  return FloatIv{value, value, false};
}
ATTNJIT_HD float step_down(float x, int ulps) {
  if (is_nan_f(x)) return -inf_f();
  // Note: a flush-to-zero device may turn a tiny positive result into 0.
  if (x > 0.0f && x < kMinNormal) x = 0.0f;
  for (int i = 0; i < ulps; ++i) {
    if (x == -inf_f()) return x;
    if (x == 0.0f) {
      x = -bits_to_float(1);
    } else {
      const int bits = float_to_bits(x);
      x = bits_to_float(x > 0.0f ? bits - 1 : bits + 1);
    }
  }
  return x;
}
ATTNJIT_HD float step_up(float x, int ulps) { return -step_down(-x, ulps); }
// Bounds from candidate values that may be NaN: a NaN candidate gives up on that side.
ATTNJIT_HD FloatIv iv_widen(float lo, float hi, bool nan, int ulps) {
  if (is_nan_f(lo) || is_nan_f(hi)) return iv_float_full();
  return FloatIv{step_down(lo, ulps), step_up(hi, ulps), nan};
}
ATTNJIT_HD float min4_f(float a, float b, float c, float d) {
  const float x = a < b ? a : b, y = c < d ? c : d;
  return x < y ? x : y;
}
ATTNJIT_HD float max4_f(float a, float b, float c, float d) {
  const float x = a > b ? a : b, y = c > d ? c : d;
  return x > y ? x : y;
}
ATTNJIT_HD bool has_nan4(float a, float b, float c, float d) {
  return is_nan_f(a) || is_nan_f(b) || is_nan_f(c) || is_nan_f(d);
}
ATTNJIT_HD bool iv_contains(FloatIv a, float x) { return a.lo <= x && x <= a.hi; }

ATTNJIT_HD FloatIv iv_add(FloatIv a, FloatIv b) {
  const bool nan = a.nan || b.nan || (a.hi == inf_f() && b.lo == -inf_f()) ||
                   (a.lo == -inf_f() && b.hi == inf_f());
  return iv_widen(a.lo + b.lo, a.hi + b.hi, nan, kArithUlps);
}
ATTNJIT_HD FloatIv iv_neg(FloatIv a) { return FloatIv{-a.hi, -a.lo, a.nan}; }
ATTNJIT_HD FloatIv iv_sub(FloatIv a, FloatIv b) { return iv_add(a, iv_neg(b)); }
ATTNJIT_HD FloatIv iv_mul(FloatIv a, FloatIv b) {
  const float c0 = a.lo * b.lo, c1 = a.lo * b.hi, c2 = a.hi * b.lo, c3 = a.hi * b.hi;
  if (has_nan4(c0, c1, c2, c3)) return iv_float_full();
  const bool a_inf = a.lo == -inf_f() || a.hi == inf_f();
  const bool b_inf = b.lo == -inf_f() || b.hi == inf_f();
  const bool nan = a.nan || b.nan || (a_inf && iv_contains(b, 0.0f)) || (b_inf && iv_contains(a, 0.0f));
  return iv_widen(min4_f(c0, c1, c2, c3), max4_f(c0, c1, c2, c3), nan, kArithUlps);
}
ATTNJIT_HD FloatIv iv_div(FloatIv a, FloatIv b) {
  if (iv_contains(b, 0.0f)) return iv_float_full();
  const float c0 = a.lo / b.lo, c1 = a.lo / b.hi, c2 = a.hi / b.lo, c3 = a.hi / b.hi;
  if (has_nan4(c0, c1, c2, c3)) return iv_float_full();
  const bool a_inf = a.lo == -inf_f() || a.hi == inf_f();
  const bool b_inf = b.lo == -inf_f() || b.hi == inf_f();
  return iv_widen(min4_f(c0, c1, c2, c3), max4_f(c0, c1, c2, c3), a.nan || b.nan || (a_inf && b_inf),
                  kArithUlps);
}
// Monotone non-decreasing functions: bounds map to bounds.
ATTNJIT_HD FloatIv iv_exp(FloatIv a) { return iv_widen(exp_f(a.lo), exp_f(a.hi), a.nan, kMathUlps); }
ATTNJIT_HD FloatIv iv_exp2(FloatIv a) {
  return iv_widen(exp2_f(a.lo), exp2_f(a.hi), a.nan, kMathUlps);
}
ATTNJIT_HD FloatIv iv_tanh(FloatIv a) {
  return iv_widen(tanh_f(a.lo), tanh_f(a.hi), a.nan, kMathUlps);
}
ATTNJIT_HD FloatIv iv_sigmoid(FloatIv a) {
  return iv_widen(sigmoid_f(a.lo), sigmoid_f(a.hi), a.nan, kMathUlps);
}
ATTNJIT_HD FloatIv iv_floor(FloatIv a) { return FloatIv{floor_f(a.lo), floor_f(a.hi), a.nan}; }
ATTNJIT_HD FloatIv iv_ceil(FloatIv a) { return FloatIv{ceil_f(a.lo), ceil_f(a.hi), a.nan}; }
// Defined on [0, inf]: a negative input gives NaN.
ATTNJIT_HD FloatIv iv_log(FloatIv a) {
  if (a.hi < 0.0f) return iv_float_full();
  const float lo = a.lo < 0.0f ? 0.0f : a.lo;
  return iv_widen(log_f(lo), log_f(a.hi), a.nan || a.lo < 0.0f, kMathUlps);
}
ATTNJIT_HD FloatIv iv_log2(FloatIv a) {
  if (a.hi < 0.0f) return iv_float_full();
  const float lo = a.lo < 0.0f ? 0.0f : a.lo;
  return iv_widen(log2_f(lo), log2_f(a.hi), a.nan || a.lo < 0.0f, kMathUlps);
}
ATTNJIT_HD FloatIv iv_sqrt(FloatIv a) {
  if (a.hi < 0.0f) return iv_float_full();
  const float lo = a.lo < 0.0f ? 0.0f : a.lo;
  return iv_widen(sqrt_f(lo), sqrt_f(a.hi), a.nan || a.lo < 0.0f, kMathUlps);
}
ATTNJIT_HD FloatIv iv_rsqrt(FloatIv a) {
  if (a.lo <= 0.0f) return iv_float_full();  // rsqrt(-0) == -inf, negative inputs give NaN
  return iv_widen(rsqrt_f(a.hi), rsqrt_f(a.lo), a.nan, kMathUlps);
}
ATTNJIT_HD FloatIv iv_pow(FloatIv a, FloatIv b) {
  if (a.lo == a.hi && b.lo == b.hi && !a.nan && !b.nan) {
    const float r = pow_f(a.lo, b.lo);
    return iv_widen(r, r, false, kMathUlps);
  }
  return iv_float_full();
}
ATTNJIT_HD FloatIv iv_abs(FloatIv a) {
  if (a.lo >= 0.0f) return FloatIv{0.0f > a.lo ? 0.0f : a.lo, a.hi, a.nan};
  if (a.hi <= 0.0f) return FloatIv{-a.hi, -a.lo, a.nan};
  return FloatIv{0.0f, -a.lo > a.hi ? -a.lo : a.hi, a.nan};
}
// fmin/fmax return the other operand when one is NaN.
ATTNJIT_HD FloatIv iv_min(FloatIv a, FloatIv b) {
  float hi = a.hi < b.hi ? a.hi : b.hi;
  if (a.nan && b.hi > hi) hi = b.hi;
  if (b.nan && a.hi > hi) hi = a.hi;
  return FloatIv{a.lo < b.lo ? a.lo : b.lo, hi, a.nan && b.nan};
}
ATTNJIT_HD FloatIv iv_max(FloatIv a, FloatIv b) {
  float lo = a.lo > b.lo ? a.lo : b.lo;
  if (a.nan && b.lo < lo) lo = b.lo;
  if (b.nan && a.lo < lo) lo = a.lo;
  return FloatIv{lo, a.hi > b.hi ? a.hi : b.hi, a.nan && b.nan};
}
ATTNJIT_HD FloatIv iv_clamp(FloatIv x, FloatIv lo, FloatIv hi) { return iv_min(iv_max(x, lo), hi); }
ATTNJIT_HD FloatIv iv_join(FloatIv a, FloatIv b) {
  return FloatIv{a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi, a.nan || b.nan};
}

// Comparisons with a possible NaN are unknown.
ATTNJIT_HD Tri iv_lt(FloatIv a, FloatIv b) {
  if (a.nan || b.nan) return tri_unknown();
  if (a.hi < b.lo) return tri(true);
  if (a.lo >= b.hi) return tri(false);
  return tri_unknown();
}
ATTNJIT_HD Tri iv_le(FloatIv a, FloatIv b) {
  if (a.nan || b.nan) return tri_unknown();
  if (a.hi <= b.lo) return tri(true);
  if (a.lo > b.hi) return tri(false);
  return tri_unknown();
}
ATTNJIT_HD Tri iv_gt(FloatIv a, FloatIv b) { return iv_lt(b, a); }
ATTNJIT_HD Tri iv_ge(FloatIv a, FloatIv b) { return iv_le(b, a); }
ATTNJIT_HD Tri iv_eq(FloatIv a, FloatIv b) {
  if (a.nan || b.nan) return tri_unknown();
  if (a.lo == a.hi && b.lo == b.hi && a.lo == b.lo) return tri(true);
  if (a.hi < b.lo || b.hi < a.lo) return tri(false);
  return tri_unknown();
}
ATTNJIT_HD Tri iv_ne(FloatIv a, FloatIv b) { return tri_not(iv_eq(a, b)); }

// Conversions are monotone, so bounds map to bounds.
ATTNJIT_HD FloatIv iv_i2f(IntIv a) { return FloatIv{i2f(a.lo), i2f(a.hi), false}; }
ATTNJIT_HD IntIv iv_f2i(FloatIv a) {
  IntIv r{f2i(a.lo), f2i(a.hi)};
  return a.nan ? iv_join(r, iv_int(0)) : r;
}
ATTNJIT_HD FloatIv iv_tri_to_float(Tri a) {
  return FloatIv{a.may_false ? 0.0f : 1.0f, a.may_true ? 1.0f : 0.0f, false};
}

// Select by a three-valued condition.
ATTNJIT_HD IntIv iv_select(Tri c, IntIv a, IntIv b) {
  return !c.may_false ? a : !c.may_true ? b : iv_join(a, b);
}
ATTNJIT_HD FloatIv iv_select(Tri c, FloatIv a, FloatIv b) {
  return !c.may_false ? a : !c.may_true ? b : iv_join(a, b);
}
ATTNJIT_HD Tri iv_select(Tri c, Tri a, Tri b) {
  return !c.may_false ? a : !c.may_true ? b : tri_join(a, b);
}

// ---------------------------------------------------------------------------------------------
// Tensor reads over a tile.

// A read at indices that each take one value over the tile (made of b, h, parameters and
// constants: `len[b]`, `window[h]`, `start[b, h]`) is that element, read with the out-of-range
// rule (0), so that per-sequence lengths and offsets classify tiles as exactly as the index
// arithmetic around them. A read at indices that vary over the tile: any value (the full range,
// which includes the 0 of an out-of-range read).
// Note: one load per classification step, at the same address for the whole block: a broadcast
// from L1. Standard masks never take it (the document mask's reads are the summaries' below).
ATTNJIT_HD IntIv iv_read_i32(const TensorArg& t, IntIv i) {
  return i.lo == i.hi ? iv_int(read_i32(t, i.lo)) : iv_int_full();
}
ATTNJIT_HD IntIv iv_read_i32(const TensorArg& t, IntIv i, IntIv j) {
  return i.lo == i.hi && j.lo == j.hi ? iv_int(read_i32(t, i.lo, j.lo)) : iv_int_full();
}
ATTNJIT_HD FloatIv iv_read_f32(const TensorArg& t, IntIv i) {
  return i.lo == i.hi ? iv_float(read_f32(t, i.lo)) : iv_float_full();
}
ATTNJIT_HD FloatIv iv_read_f32(const TensorArg& t, IntIv i, IntIv j) {
  return i.lo == i.hi && j.lo == j.hi ? iv_float(read_f32(t, i.lo, j.lo)) : iv_float_full();
}

// A rank-1 int32 tensor read at exactly q_idx (or kv_idx) over the index range `index`, using
// the per-block min/max summary when there is one.
ATTNJIT_HD IntIv iv_read_summary(const TensorArg& t, const TensorSummary& s, IntIv index) {
  if (s.min == nullptr || s.max == nullptr || s.granularity <= 0) return iv_int_full();
#if ATTNJIT_KERNEL_CODE
  note_prerequisite_read("a tensor summary");  // the summary kernel's output
#endif
  int lo = kIntMax, hi = kIntMin;
  if (index.lo < 0 || index.hi >= t.dims[0] || t.data == nullptr) {
    lo = hi = 0;  // some index reads out of range
  }
  const int first = index.lo < 0 ? 0 : index.lo / s.granularity;
  const int last = index.hi < 0 ? -1 : index.hi / s.granularity;
  for (int block = first; block <= last; ++block) {
    if (block >= s.num_blocks) {
      lo = min_i(lo, 0);
      hi = max_i(hi, 0);
      break;
    }
    lo = min_i(lo, s.min[block]);
    hi = max_i(hi, s.max[block]);
  }
  return lo <= hi ? IntIv{lo, hi} : iv_int_full();
}

}  // namespace ops
}  // namespace attnjit
