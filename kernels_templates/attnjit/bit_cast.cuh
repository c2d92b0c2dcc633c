// A float's bits and back, on both sides: the device's intrinsics, the host's memcpy (the one
// well-defined way in C++17, which the host build and NVRTC both compile).
#pragma once

#include "attnjit/hd.cuh"

#if !ATTNJIT_DEVICE_COMPILE
#include <cstring>
#endif

namespace attnjit {

ATTNJIT_HD unsigned float_bits(float value) {
#if ATTNJIT_DEVICE_COMPILE
  return __float_as_uint(value);
#else
  unsigned bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

ATTNJIT_HD float bits_float(unsigned bits) {
#if ATTNJIT_DEVICE_COMPILE
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

}  // namespace attnjit
