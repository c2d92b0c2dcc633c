// The fake driver's tensor maps: what cuTensorMapEncodeTiled of tests/fake_driver writes into the
// 128-byte CUtensorMap, and what the emulated TMA load (hopper_tma.hpp) reads back. One header for
// both sides, so the encoding has one definition. Plain integer types instead of cuda.h's enums
// (their values are the same; the fake driver static_asserts it), because the emulated kernels are
// built without the toolkit's headers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace attnjit::simt {

// cuda.h's values of the CUtensorMap* enums this model knows.
inline constexpr int kFakeDataTypeFloat16 = 6;   // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
inline constexpr int kFakeDataTypeBfloat16 = 9;  // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
inline constexpr int kFakeDataTypeLast = 15;     // CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B
inline constexpr int kFakeInterleaveNone = 0;    // CU_TENSOR_MAP_INTERLEAVE_NONE
inline constexpr int kFakeInterleaveLast = 2;    // CU_TENSOR_MAP_INTERLEAVE_32B
inline constexpr int kFakeSwizzleNone = 0;       // CU_TENSOR_MAP_SWIZZLE_NONE
inline constexpr int kFakeSwizzle128B = 3;       // CU_TENSOR_MAP_SWIZZLE_128B
inline constexpr int kFakeSwizzleLast = 6;       // CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B
inline constexpr int kFakeL2PromotionLast = 3;   // CU_TENSOR_MAP_L2_PROMOTION_L2_256B
inline constexpr int kFakeOobFillNone = 0;       // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
inline constexpr int kFakeOobFillNan = 1;  // CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA

// The decoded map. `magic` tells a fake map from 128 arbitrary bytes.
struct FakeTensorMap {
  static constexpr std::uint64_t kMagic = 0x50414d54'4a4e5441ull;  // "ATNJTMAP"
  std::uint64_t magic;
  // Note: the second word is left unused because the CUDA backend clears one of its bits on
  // older drivers (apply_small_tensor_map_workaround, src/runtime/tensor_map_encoding.hpp).
  std::uint64_t reserved;
  std::uint64_t global_address;
  std::uint64_t global_dim[5];
  std::uint64_t global_strides[4];  // bytes, dims 1..rank-1 (dim 0 is the element size)
  std::uint32_t box_dim[5];
  std::uint8_t element_strides[5];
  std::uint8_t data_type, rank, interleave, swizzle, l2_promotion, oob_fill;
};
static_assert(sizeof(FakeTensorMap) <= 128, "must fit a CUtensorMap");

// Bytes per element of a data type, 0 for the sub-byte packed types.
inline int fake_tensor_map_element_bytes(int data_type) {
  static constexpr int kBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4, 0, 0, 0};
  return data_type >= 0 && data_type <= kFakeDataTypeLast ? kBytes[data_type] : -1;
}

// Validates the arguments as the driver's cuTensorMapEncodeTiled documents and writes the map to
// `map` (128 bytes). Returns an empty string, or why the real driver would answer
// CUDA_ERROR_INVALID_VALUE.
inline std::string encode_fake_tensor_map(void* map, int data_type, std::uint32_t rank,
                                          void* global_address, const std::uint64_t* global_dim,
                                          const std::uint64_t* global_strides,
                                          const std::uint32_t* box_dim,
                                          const std::uint32_t* element_strides, int interleave,
                                          int swizzle, int l2_promotion, int oob_fill) {
  char why[200];
  auto invalid = [&](const char* format, auto... args) {
    std::snprintf(why, sizeof why, format, args...);
    return std::string(why);
  };
  if (map == nullptr) return invalid("tensorMap is NULL");
  const int element_bytes = fake_tensor_map_element_bytes(data_type);
  if (element_bytes <= 0) return invalid("tensorDataType %d is not modelled", data_type);
  if (interleave < 0 || interleave > kFakeInterleaveLast) {
    return invalid("interleave %d is not a CUtensorMapInterleave", interleave);
  }
  if (swizzle < 0 || swizzle > kFakeSwizzleLast) {
    return invalid("swizzle %d is not a CUtensorMapSwizzle", swizzle);
  }
  if (l2_promotion < 0 || l2_promotion > kFakeL2PromotionLast) {
    return invalid("l2Promotion %d is not a CUtensorMapL2promotion", l2_promotion);
  }
  if (oob_fill != kFakeOobFillNone && oob_fill != kFakeOobFillNan) {
    return invalid("oobFill %d is not a CUtensorMapFloatOOBfill", oob_fill);
  }
  const std::uint32_t min_rank = interleave == kFakeInterleaveNone ? 1 : 3;
  if (rank < min_rank || rank > 5)
    return invalid("tensorRank %u is outside [%u, 5]", rank, min_rank);
  const auto address = reinterpret_cast<std::uintptr_t>(global_address);
  const unsigned address_alignment = interleave == kFakeInterleaveLast ? 32 : 16;
  if (address == 0 || address % address_alignment != 0) {
    return invalid("globalAddress %p is not %u-byte aligned", global_address, address_alignment);
  }
  for (std::uint32_t i = 0; i < rank; ++i) {
    if (global_dim[i] == 0 || global_dim[i] > (1ull << 32)) {
      return invalid("globalDim[%u] = %llu is outside [1, 2^32]", i,
                     static_cast<unsigned long long>(global_dim[i]));
    }
    if (box_dim[i] == 0 || box_dim[i] > 256) {
      return invalid("boxDim[%u] = %u is outside [1, 256]", i, box_dim[i]);
    }
    if (element_strides[i] == 0 || element_strides[i] > 8) {
      return invalid("elementStrides[%u] = %u is outside [1, 8]", i, element_strides[i]);
    }
  }
  for (std::uint32_t i = 0; i + 1 < rank; ++i) {
    const std::uint64_t stride = global_strides[i];
    if (stride % 16 != 0 || stride >= (1ull << 40)) {
      return invalid("globalStrides[%u] = %llu is not a multiple of 16 below 2^40", i,
                     static_cast<unsigned long long>(stride));
    }
  }
  const std::uint64_t inner_bytes = std::uint64_t{box_dim[0]} * element_bytes;
  if (interleave == kFakeInterleaveNone) {
    if (inner_bytes % 16 != 0) {
      return invalid("boxDim[0] * element size = %llu bytes is not a multiple of 16",
                     static_cast<unsigned long long>(inner_bytes));
    }
    static constexpr unsigned kSwizzleSpan[] = {0, 32, 64, 128, 128, 128, 128};
    if (swizzle != kFakeSwizzleNone && inner_bytes > kSwizzleSpan[swizzle]) {
      return invalid("the inner box dimension (%llu bytes) exceeds the swizzle span (%u bytes)",
                     static_cast<unsigned long long>(inner_bytes), kSwizzleSpan[swizzle]);
    }
  }
  const bool float_type = data_type == kFakeDataTypeFloat16 || data_type == kFakeDataTypeBfloat16 ||
                          (data_type >= 7 && data_type <= 12);
  if (oob_fill == kFakeOobFillNan && !float_type) {
    return invalid("oobFill NaN needs a floating-point tensorDataType");
  }
  FakeTensorMap fake{};
  fake.magic = FakeTensorMap::kMagic;
  fake.global_address = address;
  for (std::uint32_t i = 0; i < rank; ++i) {
    fake.global_dim[i] = global_dim[i];
    fake.box_dim[i] = box_dim[i];
    fake.element_strides[i] = static_cast<std::uint8_t>(element_strides[i]);
  }
  for (std::uint32_t i = 0; i + 1 < rank; ++i) fake.global_strides[i] = global_strides[i];
  fake.data_type = static_cast<std::uint8_t>(data_type);
  fake.rank = static_cast<std::uint8_t>(rank);
  fake.interleave = static_cast<std::uint8_t>(interleave);
  fake.swizzle = static_cast<std::uint8_t>(swizzle);
  fake.l2_promotion = static_cast<std::uint8_t>(l2_promotion);
  fake.oob_fill = static_cast<std::uint8_t>(oob_fill);
  std::memset(map, 0, 128);
  std::memcpy(map, &fake, sizeof fake);
  return {};
}

// The map at `map`; false when the 128 bytes are not a fake map.
inline bool decode_fake_tensor_map(const void* map, FakeTensorMap& out) {
  std::memcpy(&out, map, sizeof out);
  return out.magic == FakeTensorMap::kMagic;
}

}  // namespace attnjit::simt
