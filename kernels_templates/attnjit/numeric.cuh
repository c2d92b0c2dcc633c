// 16-bit storage types and the few conversions the kernels need, written with inline PTX so that
// no toolkit header (cuda_bf16.h, cuda_fp16.h) is needed when NVRTC compiles a variant.
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

// Raw storage of one bfloat16 / float16 value; the kernels never do arithmetic on them directly,
// only pack fp32 pairs into them and feed them to mma.
struct bf16_t {
  unsigned short bits;
};
struct fp16_t {
  unsigned short bits;
};
// 16 bytes moved as one vector (an 8-element row chunk of a tile).
struct alignas(16) Bytes16 {
  unsigned x, y, z, w;
};

#if ATTNJIT_DEVICE_COMPILE

template <typename ELEM>
struct ElemTraits;

template <>
struct ElemTraits<bf16_t> {
  // Packs (lo, hi) into one register: `lo` in bits 0..15, the element with the smaller index.
  // Note: cvt.rn.bf16x2.f32 d, a, b puts a in the upper half and b in the lower half.
  ATTNJIT_DEVICE static unsigned pack2(float lo, float hi) {
    unsigned packed;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
    return packed;
  }
};

template <>
struct ElemTraits<fp16_t> {
  ATTNJIT_DEVICE static unsigned pack2(float lo, float hi) {
    unsigned packed;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
    return packed;
  }
};

// 2^x with the hardware approximation (ex2.approx.ftz.f32): 2^-inf = +0, which the online
// softmax relies on for masked scores.
ATTNJIT_DEVICE float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// log2(x) with the hardware approximation; only used once per row for the LSE.
ATTNJIT_DEVICE float fast_log2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// tanh(x), relative error about 2^-11 (tanh.approx.f32, sm_75+).
ATTNJIT_DEVICE float fast_tanh(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 1 / x with the hardware approximation (rcp.approx.ftz.f32): 1 / inf = 0.
ATTNJIT_DEVICE float fast_reciprocal(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// a / b within 2 ulp over the whole range (div.full.f32; the IEEE division is a long sequence).
ATTNJIT_DEVICE float fast_divide(float a, float b) {
  float y;
  asm("div.full.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}

ATTNJIT_DEVICE float neg_infinity() { return __int_as_float(0xff800000); }
ATTNJIT_DEVICE float quiet_nan() { return __int_as_float(0x7fffffff); }

#endif  // ATTNJIT_DEVICE_COMPILE

}  // namespace attnjit
