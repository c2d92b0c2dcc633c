// The fake libcuda's cuTensorMapEncodeTiled, resolved through cuGetProcAddress as the backend
// resolves every entry point: it validates like the real driver and writes the shared fake
// encoding the emulated TMA loads read back.
#include "attnjit_simt/fake_tensor_map.hpp"

#include <cuda.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "fake_entry_points.hpp"

namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled resolve_encode_tiled() {
  return attnjit::fake_driver::resolve<EncodeTiled>("cuTensorMapEncodeTiled");
}

// The arguments of an attnjit Q/K/V map: bf16 [batch][heads][len][head_dim], box {64, 128, 1, 1}.
struct MapArguments {
  // Note: operator new's storage is 16-byte aligned, as the driver requires.
  std::vector<std::uint16_t> tensor = std::vector<std::uint16_t>(2 * 3 * 100 * 128);
  void* address = tensor.data();
  cuuint64_t dims[4] = {128, 100, 3, 2};
  cuuint64_t strides[3] = {128 * 2, 100 * 128 * 2, 3 * 100 * 128 * 2};
  cuuint32_t box[4] = {64, 128, 1, 1};
  cuuint32_t element_strides[4] = {1, 1, 1, 1};
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  cuuint32_t rank = 4;

  CUresult encode(CUtensorMap* map) const {
    static const EncodeTiled encode_tiled = resolve_encode_tiled();
    return encode_tiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank, address, dims, strides, box,
                        element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  }
};

}  // namespace

TEST_CASE("fake cuTensorMapEncodeTiled writes the shared fake encoding", "[fake_driver]") {
  const MapArguments args;
  CUtensorMap map;
  REQUIRE(args.encode(&map) == CUDA_SUCCESS);
  attnjit::simt::FakeTensorMap decoded;
  REQUIRE(attnjit::simt::decode_fake_tensor_map(&map, decoded));
  CHECK(decoded.global_address == reinterpret_cast<std::uintptr_t>(args.address));
  CHECK(decoded.rank == 4);
  CHECK(decoded.data_type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  CHECK(decoded.swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
  for (int i = 0; i < 4; ++i) {
    CHECK(decoded.global_dim[i] == args.dims[i]);
    CHECK(decoded.box_dim[i] == args.box[i]);
  }
  for (int i = 0; i < 3; ++i) CHECK(decoded.global_strides[i] == args.strides[i]);
}

TEST_CASE("fake cuTensorMapEncodeTiled rejects what the real driver rejects", "[fake_driver]") {
  CUtensorMap map;
  SECTION("a global address not 16-byte aligned") {
    MapArguments args;
    args.address = static_cast<char*>(args.address) + 2;
    CHECK(args.encode(&map) == CUDA_ERROR_INVALID_VALUE);
  }
  SECTION("a stride not a multiple of 16 bytes") {
    MapArguments args;
    args.strides[0] = 100 * 2;  // a row of 100 elements: 200 bytes
    CHECK(args.encode(&map) == CUDA_ERROR_INVALID_VALUE);
  }
  SECTION("an inner box wider than the 128-byte swizzle span") {
    MapArguments args;
    args.box[0] = 128;
    CHECK(args.encode(&map) == CUDA_ERROR_INVALID_VALUE);
    args.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
    CHECK(args.encode(&map) == CUDA_SUCCESS);
  }
  SECTION("a box dimension over 256") {
    MapArguments args;
    args.box[1] = 257;
    CHECK(args.encode(&map) == CUDA_ERROR_INVALID_VALUE);
  }
  SECTION("a rank over 5") {
    MapArguments args;
    args.rank = 6;
    CHECK(args.encode(&map) == CUDA_ERROR_INVALID_VALUE);
  }
}
