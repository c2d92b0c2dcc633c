#include "runtime/cuda_backend.hpp"

#include <cuda.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <type_traits>

#include "attnjit/fwd_params.cuh"
#include "common/error.hpp"
#include "driver/cuda_driver.hpp"
#include "expr/block_analysis.hpp"
#include "runtime/cuda_context.hpp"

namespace attnjit::cuda {
namespace {

constexpr std::uintptr_t kVectorAlignment = 16;  // the kernels load rows with 16-byte cp.async
constexpr int kSummaryThreads = 256;
constexpr unsigned kMaxGridY = 65535;

DeviceInfo cached_device(CUdevice device) {
  static std::mutex mutex;
  static std::map<CUdevice, DeviceInfo> devices;
  {
    std::lock_guard lock(mutex);
    if (const auto found = devices.find(device); found != devices.end()) return found->second;
  }
  DeviceInfo info = query_device(device);
  std::lock_guard lock(mutex);
  return devices.emplace(device, std::move(info)).first->second;
}

// Where a pointer lives, as the driver sees it. Unregistered host memory gets all zeros:
// cuPointerGetAttributes reports no error for pointers it does not know (cuda.h, unlike
// cuPointerGetAttribute, which answers CUDA_ERROR_INVALID_VALUE).
struct PointerInfo {
  unsigned memory_type = 0;  // CUmemorytype, 0 when unknown to the driver
  bool managed = false;
  int device_ordinal = -1;
  CUcontext context = nullptr;  // null for memory not tied to a context (pools, VMM, managed)
  std::uintptr_t range_start = 0;
  std::size_t range_bytes = 0;
};

PointerInfo pointer_info(const char* what, const void* pointer) {
  unsigned memory_type = 0;
  unsigned managed = 0;  // Note: the driver writes a bool; a zeroed word reads the same
  int ordinal = -1;
  CUcontext context = nullptr;
  CUdeviceptr range_start = 0;
  std::size_t range_bytes = 0;
  CUpointer_attribute attributes[] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE,      CU_POINTER_ATTRIBUTE_IS_MANAGED,
      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,   CU_POINTER_ATTRIBUTE_CONTEXT,
      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void* values[] = {&memory_type, &managed, &ordinal, &context, &range_start, &range_bytes};
  const driver::DriverApi& d = driver::api();
  if (d.cuPointerGetAttributes == nullptr) driver::throw_missing_symbol("cuPointerGetAttributes");
  const CUresult result =
      d.cuPointerGetAttributes(static_cast<unsigned>(std::size(attributes)), attributes, values,
                               static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(pointer)));
  if (result == CUDA_ERROR_INVALID_VALUE || result == CUDA_ERROR_INVALID_CONTEXT) {
    throw_error(Status::invalid_argument,
                "{} pointer {} is not memory the CUDA driver can describe ({}); the cuda backend "
                "needs buffers from cudaMalloc / cuMemAlloc or managed memory",
                what, pointer, driver::describe_result(result));
  }
  driver::check(result, "cuPointerGetAttributes");
  return {memory_type, managed != 0, ordinal, context, static_cast<std::uintptr_t>(range_start),
          range_bytes};
}

// Throws Error(invalid_argument) unless `pointer` is device or managed memory usable in
// `context`, aligned to `alignment` and with `bytes` bytes from it inside its allocation.
// Note: the range check is only as tight as the driver's range: for pool (cudaMallocAsync) and
// VMM allocations RANGE_SIZE is the reserved address range, which may be larger than the
// allocation, so an overrun there is not always caught.
void check_device_buffer(const char* what, const void* pointer, std::size_t bytes,
                         std::uintptr_t alignment, const DeviceInfo& device,
                         const ContextRef& context) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  if (address % alignment != 0) {
    throw_error(Status::invalid_argument,
                "{} pointer {} is not aligned to {} bytes; the kernels load it with vector "
                "loads",
                what, pointer, alignment);
  }
  const PointerInfo info = pointer_info(what, pointer);
  if (!info.managed && info.memory_type != CU_MEMORYTYPE_DEVICE) {
    throw_error(Status::invalid_argument,
                "{} pointer {} is not device memory ({}); the cuda backend needs buffers from "
                "cudaMalloc / cuMemAlloc or managed memory",
                what, pointer,
                info.memory_type == CU_MEMORYTYPE_HOST ? "it is page-locked host memory"
                                                       : "the CUDA driver does not know it");
  }
  if (!info.managed && info.device_ordinal >= 0 && info.device_ordinal != device.ordinal) {
    throw_error(Status::invalid_argument,
                "{} pointer {} is memory of device {} but the current context is on device {}",
                what, pointer, info.device_ordinal, device.ordinal);
  }
  // Note: contexts have separate address spaces; memory of another context on the same device
  // is not mapped in this one, and a kernel reading it faults.
  if (!info.managed && info.context != nullptr && info.context != context.context) {
    throw_error(Status::invalid_argument,
                "{} pointer {} was allocated in another CUDA context than the current one "
                "(context {} vs {}); make the allocating context current first",
                what, pointer, static_cast<const void*>(info.context),
                static_cast<const void*>(context.context));
  }
  if (info.range_bytes != 0 && address >= info.range_start) {
    const std::size_t available = info.range_start + info.range_bytes - address;
    if (bytes > available) {
      throw_error(Status::invalid_argument,
                  "{} buffer is too small: the call reads or writes {} bytes from {} but its "
                  "allocation ends {} bytes after it",
                  what, bytes, pointer, available);
    }
  }
}

// Bytes from the first to one past the last element of a [batch, heads, len, head_dim] view.
std::size_t view_bytes(const Strides& s, int batch, int heads, int len, int head_dim,
                       std::size_t element) {
  const std::int64_t last = (batch - 1) * s.batch + (heads - 1) * s.head + (len - 1) * s.row;
  return static_cast<std::size_t>(last + head_dim) * element;
}

void check_strides(const char* what, const Strides& s, std::size_t element) {
  const struct {
    const char* name;
    std::int64_t value;
  } all[] = {{"batch", s.batch}, {"head", s.head}, {"row", s.row}};
  for (const auto& [name, value] : all) {
    const auto bytes = static_cast<std::int64_t>(static_cast<std::size_t>(value) * element);
    if (bytes % static_cast<std::int64_t>(kVectorAlignment) != 0) {
      throw_error(Status::invalid_argument,
                  "{} {} stride ({} elements = {} bytes) must be a multiple of {} bytes", what,
                  name, value, bytes, kVectorAlignment);
    }
  }
}

void check_dtypes(const AttentionBuffers& b) {
  for (const DType dtype : {b.q_dtype, b.k_dtype, b.v_dtype}) {
    if (dtype != DType::bf16 && dtype != DType::fp16) {
      throw_error(Status::unsupported,
                  "query, key and value must be bfloat16 or float16; got {} (the cuda backend "
                  "has no float32 kernels; use backend cpu)",
                  dtype_name(dtype));
    }
  }
  if (b.k_dtype != b.q_dtype || b.v_dtype != b.q_dtype) {
    throw_error(Status::invalid_argument,
                "query, key and value must have the same dtype; got {}, {} and {}",
                dtype_name(b.q_dtype), dtype_name(b.k_dtype), dtype_name(b.v_dtype));
  }
}

void check_tensor_args(const expr::Signature& signature, const VariantArgs& args,
                       const DeviceInfo& device, const ContextRef& context) {
  for (std::size_t i = 0; i < signature.tensors.size(); ++i) {
    const expr::TensorDecl& decl = signature.tensors[i];
    const TensorArg& arg = args.tensors[i];
    const int elem = decl.elem == expr::TensorElemType::int32 ? kTensorInt32 : kTensorFloat32;
    if (arg.data == nullptr) {
      throw_error(Status::invalid_argument, "tensor '{}' (#{}) is declared but not passed",
                  decl.name, i);
    }
    if (arg.rank != decl.rank || arg.elem != elem) {
      throw_error(Status::invalid_argument,
                  "tensor '{}' was declared as {} but passed with rank {} and element type {}",
                  decl.name, expr::to_string(decl), arg.rank,
                  arg.elem == kTensorInt32 ? "int32" : "float32");
    }
    const int cols = decl.rank == 2 ? arg.dims[1] : 1;
    if (arg.dims[0] <= 0 || cols <= 0) {
      throw_error(Status::invalid_argument, "tensor '{}' has empty dims [{}, {}]", decl.name,
                  arg.dims[0], arg.dims[1]);
    }
    const std::string what = fmt::format("tensor '{}'", decl.name);
    check_device_buffer(what.c_str(), arg.data,
                        static_cast<std::size_t>(arg.dims[0]) * static_cast<std::size_t>(cols) * 4,
                        4, device, context);
  }
}

void check_buffers(const AttentionShape& s, const AttentionBuffers& b, const DeviceInfo& device,
                   const ContextRef& context) {
  const std::size_t element = dtype_size(b.q_dtype);
  const struct {
    const char* name;
    const void* pointer;
    const Strides& strides;
    int heads;
    int len;
  } all[] = {{"query", b.q, b.q_strides, s.num_heads_q, s.q_len},
             {"key", b.k, b.k_strides, s.num_heads_kv, s.kv_len},
             {"value", b.v, b.v_strides, s.num_heads_kv, s.kv_len},
             {"output", b.out, b.out_strides, s.num_heads_q, s.q_len}};
  for (const auto& buffer : all) {
    check_strides(buffer.name, buffer.strides, element);
    check_device_buffer(
        buffer.name, buffer.pointer,
        view_bytes(buffer.strides, s.batch, buffer.heads, buffer.len, s.head_dim, element),
        kVectorAlignment, device, context);
  }
  if (b.lse != nullptr) {
    const std::size_t rows = static_cast<std::size_t>(s.batch) * s.num_heads_q * s.q_len;
    check_device_buffer("lse", b.lse, rows * sizeof(float), alignof(float), device, context);
  }
}

void check_grid(const AttentionShape& s, const codegen::KernelConfig& config) {
  const std::int64_t heads = static_cast<std::int64_t>(s.batch) * s.num_heads_q;
  if (heads > kMaxGridY) {
    throw_error(Status::unsupported,
                "batch * num_heads_q = {} exceeds the {} the kernel's grid allows; split the "
                "batch",
                heads, kMaxGridY);
  }
  (void)config;
}

void launch(const char* name, CUfunction function, unsigned grid_x, unsigned grid_y,
            unsigned threads, unsigned smem, CUstream stream, void** params) {
  const driver::DriverApi& d = driver::api();
  if (d.cuLaunchKernel == nullptr) driver::throw_missing_symbol("cuLaunchKernel");
  const CUresult result =
      d.cuLaunchKernel(function, grid_x, grid_y, 1, threads, 1, 1, smem, stream, params, nullptr);
  if (result != CUDA_SUCCESS) {
    throw Error(driver::status_for_result(result),
                fmt::format("cuLaunchKernel failed: {} (kernel {}, grid {}x{}, {} threads, {} "
                            "bytes of shared memory)",
                            driver::describe_result(result), name, grid_x, grid_y, threads, smem));
  }
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Device scratch for one call's tensor summaries, held until the forward kernel is queued.
// Outside stream capture it is the (context, stream) workspace, kept locked. During capture it is
// graph-owned memory (cuMemAllocAsync / cuMemFreeAsync on the capturing stream, which become
// allocation and free nodes): the cached workspace cannot be used there, because growing it
// needs cuStreamSynchronize (illegal during capture) and frees a buffer the graph would still
// point at, and graph replays would race with direct calls writing the same buffer.
class SummaryScratch {
 public:
  SummaryScratch() = default;
  SummaryScratch(const SummaryScratch&) = delete;
  SummaryScratch& operator=(const SummaryScratch&) = delete;
  ~SummaryScratch() {
    // Note: queued after the forward launch (destruction order in forward()), or after a failed
    // one; stream order makes the free wait for every reader.
    if (graph_owned_ != 0 && driver::api().cuMemFreeAsync != nullptr) {
      driver::api().cuMemFreeAsync(graph_owned_, stream_);
    }
  }

  CUdeviceptr acquire(const ContextRef& context, CUstream stream, std::size_t bytes) {
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    ATTNJIT_CU(cuStreamIsCapturing, stream, &capture);
    if (capture == CU_STREAM_CAPTURE_STATUS_NONE) {
      auto [workspace, lock] = acquire_workspace(context, stream, bytes);
      lock_ = std::move(lock);
      return workspace->data;
    }
    ATTNJIT_CU(cuMemAllocAsync, &graph_owned_, bytes, stream);
    stream_ = stream;
    return graph_owned_;
  }

 private:
  std::unique_lock<std::mutex> lock_;
  CUdeviceptr graph_owned_ = 0;
  CUstream stream_ = nullptr;
};

// Launches the summary kernel for each request into `scratch` and points the copies of the
// tensor args at the results.
void attach_summaries(const ContextRef& context, CUstream stream, const LoadedKernel& loaded,
                      const codegen::KernelConfig& config,
                      const std::vector<expr::SummaryRequest>& requests,
                      const AttentionShape& shape, VariantArgs& args, SummaryScratch& scratch) {
  if (requests.empty()) return;
  if (loaded.summary == nullptr) {
    throw_error(Status::internal,
                "the mask needs tensor summaries but the kernel module has no "
                "{} entry",
                codegen::kSummaryEntry);
  }
  struct Planned {
    expr::SummaryRequest request;
    int index_len, granularity, num_blocks;
    std::size_t offset;  // in ints
  };
  std::vector<Planned> plan;
  std::size_t total = 0;
  for (const expr::SummaryRequest& request : requests) {
    const bool q_axis = request.axis == expr::SummaryAxis::q;
    const int index_len = q_axis ? shape.q_len : shape.kv_len;
    const int granularity = q_axis ? config.block_m : config.block_n;
    const int num_blocks = ceil_div(index_len, granularity);
    plan.push_back({request, index_len, granularity, num_blocks, total});
    total += 2 * static_cast<std::size_t>(num_blocks);
  }
  const CUdeviceptr data_base = scratch.acquire(context, stream, total * sizeof(int));
  for (const Planned& p : plan) {
    TensorArg& tensor = args.tensors[p.request.tensor];
    const CUdeviceptr base = data_base + p.offset * sizeof(int);
    const CUdeviceptr min_ptr = base;
    const CUdeviceptr max_ptr = base + static_cast<std::size_t>(p.num_blocks) * sizeof(int);
    const int* data = static_cast<const int*>(tensor.data);
    int len = tensor.dims[0];
    int index_len = p.index_len;
    int granularity = p.granularity;
    void* params[] = {&data,
                      &len,
                      &index_len,
                      &granularity,
                      const_cast<CUdeviceptr*>(&min_ptr),
                      const_cast<CUdeviceptr*>(&max_ptr)};
    // Note: one thread per summary block (see docs/KERNELS.md).
    launch(codegen::kSummaryEntry, loaded.summary,
           static_cast<unsigned>(ceil_div(p.num_blocks, kSummaryThreads)), 1, kSummaryThreads, 0,
           stream, params);
    const TensorSummary summary{reinterpret_cast<const int*>(min_ptr),
                                reinterpret_cast<const int*>(max_ptr), p.granularity, p.num_blocks};
    (p.request.axis == expr::SummaryAxis::q ? tensor.q_summary : tensor.kv_summary) = summary;
  }
}

}  // namespace

DeviceInfo current_device() {
  const ContextRef context = current_context();
  return cached_device(context.device);
}

void forward(const KernelBinary& kernel, const expr::Expression& mask, const VariantArgs& args,
             const AttentionShape& shape, const AttentionBuffers& buffers, void* stream_handle) {
  check_dtypes(buffers);
  validate_problem(shape, buffers);
  check_grid(shape, kernel.config);

  const ContextRef context = current_context();
  const DeviceInfo device = cached_device(context.device);
  check_buffers(shape, buffers, device, context);
  check_tensor_args(mask.signature(), args, device, context);

  const LoadedKernel& loaded = load_kernel(context, device, kernel);
  const codegen::KernelConfig& config = kernel.config;
  auto stream = static_cast<CUstream>(stream_handle);

  FwdParams params{};
  params.q = buffers.q;
  params.k = buffers.k;
  params.v = buffers.v;
  params.o = buffers.out;
  params.lse = buffers.lse;
  const std::pair<long long*, const Strides*> strides[] = {{params.q_stride, &buffers.q_strides},
                                                           {params.k_stride, &buffers.k_strides},
                                                           {params.v_stride, &buffers.v_strides},
                                                           {params.o_stride, &buffers.out_strides}};
  for (const auto& [out, in] : strides) {
    out[0] = in->batch;
    out[1] = in->head;
    out[2] = in->row;
  }
  params.batch = shape.batch;
  params.num_heads_q = shape.num_heads_q;
  params.num_heads_kv = shape.num_heads_kv;
  params.q_len = shape.q_len;
  params.kv_len = shape.kv_len;
  params.scale = effective_scale(shape, buffers);
  params.args = args;

  // Note: destroyed after the launch below, so the scratch is released (unlocked, or freed in
  // stream order) only once the forward kernel that reads it is queued.
  SummaryScratch scratch;
  attach_summaries(context, stream, loaded, config, expr::summary_requests(mask), shape,
                   params.args, scratch);

  static_assert(std::is_trivially_copyable_v<FwdParams> && std::is_standard_layout_v<FwdParams>,
                "FwdParams is copied into the kernel's parameter buffer byte for byte");
  static_assert(sizeof(FwdParams) <= 4096, "FwdParams must fit the 4 KB kernel-parameter limit");
  void* launch_params[] = {&params};  // one by-value struct argument: kernelParams[0] = &params
  launch(codegen::kForwardEntry, loaded.forward,
         static_cast<unsigned>(ceil_div(shape.q_len, config.block_m)),
         static_cast<unsigned>(shape.batch * shape.num_heads_q),
         static_cast<unsigned>(config.num_warps * 32), static_cast<unsigned>(config.smem_bytes),
         stream, launch_params);
}

}  // namespace attnjit::cuda
