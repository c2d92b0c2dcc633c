// 2^x on the FMA pipe: a cubic for the fraction and the integer part put into the exponent bits
// (FlashAttention-4's software exp2). Hopper's MUFU unit does 16 exponentials per SM and clock,
// as many as its tensor cores need at head dim 64 and half of what a soft-capped score needs at
// head dim 128 (tanh is a second MUFU operation per element: docs/PERFORMANCE.md, "Where a short
// row's time goes"). The softmax computes a share of its exponentials here instead
// (OnlineSoftmax::exponentiate, ATTNJIT_TUNE=sm90_poly_exp2), trading 8 more issue slots for
// one MUFU operation.
//
// Accuracy: relative error at most 1.02e-4 (2^-13.3) for x in [-126, 127.5), against the 2^-9 of
// a bf16 probability's rounding and 2^-11 of fp16's. Exactly +0 for x <= -127 and x == -inf (a
// masked score), tiny or zero below -126; NaN stays NaN (the softmax's NaN rule,
// AttentionForward::store_output). x < 127.5 is assumed (n = 128 would give an exponent field of
// 255): the softmax only exponentiates score - running max <= 0.
//
// Shared by the kernels and the host (tests, the emulator): the same arithmetic on both sides.
#pragma once

#include "attnjit/bit_cast.cuh"
#include "attnjit/hd.cuh"

namespace attnjit {

// max(x, lo) that keeps a NaN x (fmaxf would drop it): max.NaN.f32, sm_80+.
ATTNJIT_HD float max_keeping_nan(float x, float lo) {
#if ATTNJIT_DEVICE_COMPILE
  float y;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(x), "f"(lo));
  return y;
#else
  return x != x ? x : (x > lo ? x : lo);
#endif
}

ATTNJIT_HD float poly_exp2(float x) {
  // Minimax (relative) for 2^f on [-1/2, 1/2] with the constant term exactly 1, so that
  // x = -127 gives exactly 1 * 2^-127 -> +0 below.
  constexpr float kC1 = 0.693282902f;
  constexpr float kC2 = 0.242210999f;
  constexpr float kC3 = 0.0550089329f;
  // 1.5 * 2^23 + 127: adding it rounds x to the nearest integer n, and as floats in [2^23, 2^24)
  // step by 1, the sum's low mantissa bits hold n + 127, the biased exponent of 2^n; shifted up
  // by 23 they are 2^n's bits (the constant's own bits shift out). n = -127 gives 0: +0.
  constexpr float kShift = 12583039.0f;
  x = max_keeping_nan(x, -127.0f);
  const float shifted = x + kShift;
  const float f = x - (shifted - kShift);  // exact: |f| <= 1/2
  float p = kC3 * f + kC2;
  p = p * f + kC1;
  p = p * f + 1.0f;
  // Note: a multiply, not an integer add into p's exponent: a NaN p then stays NaN whatever
  // bits the shift left (an add could turn NaN's bits into a finite number).
  return p * bits_float(float_bits(shifted) << 23);
}

}  // namespace attnjit
