// The fake libcuda's memory: allocations, copies, memsets, pointer attributes and tensor maps
// (fake_cuda.cpp says what the fake is). "Device" memory is host memory.
#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

#include "attnjit_simt/fake_tensor_map.hpp"
#include "fake_state.hpp"

using namespace attnjit::fake_cuda;

extern "C" {

// ---- Memory.
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  return allocate(pointer, bytes, false);
}
CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* pointer, size_t bytes, unsigned int) {
  return allocate(pointer, bytes, true);
}
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* pointer, size_t bytes, CUstream stream) {
  const CUresult result = allocate(pointer, bytes, false);
  if (Graph* graph = capture_of(stream); graph != nullptr && result == CUDA_SUCCESS) {
    graph->allocations.push_back(*pointer);
  }
  return result;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr pointer) { return release(pointer); }
// Pinned, device-mapped host memory: on the fake, host and device addresses are the same.
CUresult CUDAAPI cuMemHostAlloc(void** pointer, size_t bytes, unsigned int) {
  CUdeviceptr address = 0;
  const CUresult result = allocate(&address, bytes, false);
  if (result == CUDA_SUCCESS) *pointer = reinterpret_cast<void*>(address);
  return result;
}
CUresult CUDAAPI cuMemFreeHost(void* pointer) {
  return release(reinterpret_cast<CUdeviceptr>(pointer));
}
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* device, void* host, unsigned int flags) {
  std::lock_guard lock(state().mutex);
  if (flags != 0 || state().allocations.count(reinterpret_cast<std::uintptr_t>(host)) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *device = reinterpret_cast<CUdeviceptr>(host);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr pointer, CUstream stream) {
  // Note: a graph's own allocation lives as long as the graph (cuGraphDestroy frees it).
  if (const Graph* graph = capture_of(stream)) {
    const auto& owned = graph->allocations;
    if (std::find(owned.begin(), owned.end(), pointer) != owned.end()) return CUDA_SUCCESS;
  }
  return release(pointer);
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  if (const CUresult refused = forbidden_during_capture(); refused != CUDA_SUCCESS) return refused;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  if (const CUresult refused = forbidden_during_capture(); refused != CUDA_SUCCESS) return refused;
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes,
                                   CUstream stream) {
  return run_or_record(stream, [=] {
    std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return run_or_record(stream, [=] {
    std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuMemsetD32(CUdeviceptr dst, unsigned int value, size_t count) {
  if (const CUresult refused = forbidden_during_capture(); refused != CUDA_SUCCESS) return refused;
  fill_words(dst, value, count);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count,
                                  CUstream stream) {
  return run_or_record(stream, [=] {
    fill_words(dst, value, count);
    return CUDA_SUCCESS;
  });
}

// Device memory for the fake's allocations, "unknown" (all zeros, CUDA_SUCCESS) for any other
// pointer, as the real cuPointerGetAttributes answers for unregistered host memory.
CUresult CUDAAPI cuPointerGetAttributes(unsigned count, CUpointer_attribute* attributes,
                                        void** values, CUdeviceptr pointer) {
  std::lock_guard lock(state().mutex);
  const auto it = find_allocation(static_cast<std::uintptr_t>(pointer));
  const bool known = it != state().allocations.end();
  for (unsigned i = 0; i < count; ++i) {
    switch (attributes[i]) {
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned*>(values[i]) = known ? CU_MEMORYTYPE_DEVICE : 0;
        break;
      case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *static_cast<bool*>(values[i]) = known && it->second.managed;
        break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *static_cast<int*>(values[i]) = known ? 0 : -2;
        break;
      case CU_POINTER_ATTRIBUTE_CONTEXT:
        *static_cast<CUcontext*>(values[i]) = known ? the_context() : nullptr;
        break;
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *static_cast<CUdeviceptr*>(values[i]) = known ? it->first : 0;
        break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *static_cast<std::size_t*>(values[i]) = known ? it->second.bytes : 0;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                       CUdeviceptr pointer) {
  void* values[] = {data};
  return cuPointerGetAttributes(1, &attribute, values, pointer);
}

// ---- Tensor maps (TMA), encoded by the shared fake encoding that the emulated TMA loads read.
static_assert(attnjit::simt::kFakeDataTypeFloat16 == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 &&
                  attnjit::simt::kFakeDataTypeBfloat16 == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 &&
                  attnjit::simt::kFakeDataTypeLast == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B &&
                  attnjit::simt::kFakeInterleaveLast == CU_TENSOR_MAP_INTERLEAVE_32B &&
                  attnjit::simt::kFakeSwizzle128B == CU_TENSOR_MAP_SWIZZLE_128B &&
                  attnjit::simt::kFakeSwizzleLast == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B &&
                  attnjit::simt::kFakeL2PromotionLast == CU_TENSOR_MAP_L2_PROMOTION_L2_256B &&
                  attnjit::simt::kFakeOobFillNan ==
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
              "the fake encoding's constants are cuda.h's");
CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap* map, CUtensorMapDataType data_type, cuuint32_t rank, void* global_address,
    const cuuint64_t* global_dim, const cuuint64_t* global_strides, const cuuint32_t* box_dim,
    const cuuint32_t* element_strides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion l2_promotion, CUtensorMapFloatOOBfill oob_fill) {
  const std::string why = attnjit::simt::encode_fake_tensor_map(
      map, data_type, rank, global_address, global_dim, global_strides, box_dim, element_strides,
      interleave, swizzle, l2_promotion, oob_fill);
  return why.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
