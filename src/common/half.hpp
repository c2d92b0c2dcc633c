// Host conversions between float and the 16-bit float formats (bfloat16, IEEE binary16), by bit
// pattern, so they need no compiler or CPU support for the types. Float to 16 bits rounds to
// nearest, ties to even, like the GPU's __float2bfloat16_rn / __float2half_rn: subnormals are
// kept, values past the largest finite one become infinity, and NaN stays NaN with its sign.
// Widening (16 bits to float) is exact.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "common/attention_problem.hpp"

namespace attnjit {

inline float bf16_bits_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

inline std::uint16_t float_to_bf16_bits(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    // Note: truncating a NaN whose payload sits in the low 16 bits would give infinity; setting
    // the quiet bit keeps it a NaN.
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  }
  // Adding just under half a bf16 ulp, plus one when the kept part is odd, rounds ties to even;
  // a carry out of the mantissa moves to the next binade or to infinity, which is the right answer.
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

inline float fp16_bits_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  const std::uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0x1F) {  // infinity or NaN (the payload is kept, so a NaN stays a NaN)
    return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  }
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13));
}

inline std::uint16_t float_to_fp16_bits(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {  // NaN: quiet, sign and the high payload bits kept
    return static_cast<std::uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  }
  // 65520 (0x477FF000) is halfway between 65504, the largest finite half, and 65536; the tie
  // goes to the even neighbour, which is infinity.
  if (magnitude >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);
  const std::uint32_t exponent = magnitude >> 23;
  if (exponent >= 127 - 14) {  // a normal half
    const std::uint32_t mantissa = magnitude & 0x7FFFFFu;
    std::uint32_t half = ((exponent - (127 - 15)) << 10) | (mantissa >> 13);
    const std::uint32_t rest = mantissa & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0)) ++half;  // may carry: fine
    return static_cast<std::uint16_t>(sign | half);
  }
  // Subnormal half (or zero): the result counts units of 2^-24. Below 2^-25 everything rounds
  // to zero; exactly 2^-25 is a tie that also goes to (even) zero.
  if (exponent < 127 - 25) return sign;
  const std::uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = (127 - 1) - exponent;  // 14..24
  std::uint32_t units = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (units & 1u) != 0)) ++units;  // 1024 is 2^-14: fine
  return static_cast<std::uint16_t>(sign | units);
}

// The value `value` becomes when stored in `dtype`.
inline float round_to_dtype(float value, DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return bf16_bits_to_float(float_to_bf16_bits(value));
    case DType::fp16:
      return fp16_bits_to_float(float_to_fp16_bits(value));
    case DType::fp32:
      return value;
  }
  return value;
}

// Element `index` of a buffer of `dtype`, widened to float.
inline float load_as_float(const void* data, DType dtype, std::int64_t index) {
  switch (dtype) {
    case DType::bf16: {
      std::uint16_t bits;
      std::memcpy(&bits, static_cast<const std::uint16_t*>(data) + index, sizeof bits);
      return bf16_bits_to_float(bits);
    }
    case DType::fp16: {
      std::uint16_t bits;
      std::memcpy(&bits, static_cast<const std::uint16_t*>(data) + index, sizeof bits);
      return fp16_bits_to_float(bits);
    }
    case DType::fp32: {
      float value;
      std::memcpy(&value, static_cast<const float*>(data) + index, sizeof value);
      return value;
    }
  }
  return 0.0f;
}

// Stores `value` as element `index` of a buffer of `dtype`, rounding to nearest even.
inline void store_from_float(void* data, DType dtype, std::int64_t index, float value) {
  switch (dtype) {
    case DType::bf16: {
      const std::uint16_t bits = float_to_bf16_bits(value);
      std::memcpy(static_cast<std::uint16_t*>(data) + index, &bits, sizeof bits);
      return;
    }
    case DType::fp16: {
      const std::uint16_t bits = float_to_fp16_bits(value);
      std::memcpy(static_cast<std::uint16_t*>(data) + index, &bits, sizeof bits);
      return;
    }
    case DType::fp32:
      std::memcpy(static_cast<float*>(data) + index, &value, sizeof value);
      return;
  }
}

}  // namespace attnjit
