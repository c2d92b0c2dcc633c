// A TensorMapRequest (forward_plan.hpp) encoded into a TensorMap through a function with the
// signature of cuTensorMapEncodeTiled: the driver's (CUDA backend) or the fake driver's encoder
// (tests/simt), so both encode with the same arguments.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "attnjit/sm90_fwd_params.cuh"
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
  cuuint64_t dims[5];
  cuuint64_t strides[4];
  cuuint32_t box[5];
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  for (std::uint32_t d = 0; d < 5; ++d) {
    dims[d] = request.dims[d];
    box[d] = request.box[d];
    if (d < 4) strides[d] = request.strides[d];
  }
  return encode(reinterpret_cast<CUtensorMap*>(out),
                request.dtype == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                             : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                request.rank, const_cast<void*>(request.address), dims, strides, box,
                element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

// Every tensor map of a call's sm90 parameter block, each request handed with the map it fills to
// `encode_one(request, map)`: Q, K and V, and a paged call's tail maps. The call must have no
// tma_limitation.
// `group`: the call's packed GQA group (sm90_tensor_maps).
template <typename EncodeOne>
void encode_sm90_tensor_maps(const AttentionShape& shape, const AttentionBuffers& buffers,
                             const codegen::KernelConfig& config, int group, Sm90FwdParams& params,
                             EncodeOne encode_one) {
  const auto maps = sm90_tensor_maps(shape, buffers, config, group);
  encode_one(maps[0], params.q_map);
  encode_one(maps[1], params.k_map);
  encode_one(maps[2], params.v_map);
  if (is_paged(buffers)) {
    const auto tails = sm90_paged_tail_maps(maps, shape, buffers);
    encode_one(tails[0], params.k_tail_map);
    encode_one(tails[1], params.v_tail_map);
  }
}

// Bytes from the first element of the mapped tensor to the end of its last: what TMA may read.
inline std::uint64_t tensor_map_span_bytes(const TensorMapRequest& request) {
  std::uint64_t span = request.dims[0] * 2;  // 16-bit elements, contiguous in dim 0
  for (std::uint32_t i = 1; i < request.rank; ++i) {
    if (request.dims[i] > 0) span += (request.dims[i] - 1) * request.strides[i - 1];
  }
  return span;
}

// Note: CUTLASS (4.3.4, cute/atom/copy_traits_sm90_tma.hpp) clears bit 21 of an encoded map's
// second 64-bit word when the driver is CUDA 13.1 or older (cuDriverGetVersion <= 13010) and the
// mapped tensor spans under 128 KiB, as the workaround of a driver bug that "occasionally" makes
// kernels fail. The field is undocumented; we apply the same rule so that small calls (and the
// GPU tests' small shapes) do not meet the bug. The fake driver's maps keep that word unused.
constexpr int kSmallTensorMapWorkaroundMaxDriver = 13010;
constexpr std::uint64_t kSmallTensorMapWorkaroundBytes = 128 * 1024;
inline void apply_small_tensor_map_workaround(TensorMap& map, int driver_version,
                                              std::uint64_t span_bytes) {
  if (driver_version <= kSmallTensorMapWorkaroundMaxDriver &&
      span_bytes < kSmallTensorMapWorkaroundBytes) {
    map.opaque[1] &= ~(1ull << 21);
  }
}

}  // namespace attnjit
