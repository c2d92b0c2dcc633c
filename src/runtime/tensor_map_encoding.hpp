// A TensorMapRequest (forward_plan.hpp) encoded into a TensorMap through a function with the
// signature of cuTensorMapEncodeTiled: the driver's (CUDA backend) or the fake driver's encoder
// (tests/simt), so both encode with the same arguments.
#pragma once

#include <cuda.h>

#include "attnjit/sm90_tma.cuh"
#include "runtime/forward_plan.hpp"

namespace attnjit {

// Note: cuda.h 13 aligns CUtensorMap to 128 bytes, the driver needs 64 (cuTensorMapEncodeTiled's
// documented requirement), which TensorMap has.
static_assert(sizeof(TensorMap) == sizeof(CUtensorMap) && alignof(TensorMap) % 64 == 0,
              "TensorMap is the kernels' spelling of CUtensorMap");

// Note: 128-byte swizzle to match the kernel's shared-memory layout (sm90_tma.cuh); L2 promotion
// of 256 bytes because every box row is 128 bytes and consecutive rows are read together; no
// out-of-bounds fill value means zeros, which the kernel relies on past q_len and kv_len.
template <typename Encode>
CUresult encode_tensor_map(Encode encode, const TensorMapRequest& request, TensorMap* out) {
  const cuuint64_t dims[4] = {request.dims[0], request.dims[1], request.dims[2], request.dims[3]};
  const cuuint64_t strides[3] = {request.strides[0], request.strides[1], request.strides[2]};
  const cuuint32_t box[4] = {request.box[0], request.box[1], request.box[2], request.box[3]};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  return encode(reinterpret_cast<CUtensorMap*>(out),
                request.dtype == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                             : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                4, const_cast<void*>(request.address), dims, strides, box, element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

}  // namespace attnjit
