#include "runtime/cuda_backend.hpp"

#include <cuda.h>
#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <type_traits>

#include "attnjit/fwd_params.cuh"
#include "attnjit/sm90_fwd_params.cuh"
#include "common/error.hpp"
#include "common/log.hpp"
#include "driver/cuda_driver.hpp"
#include "driver/watchdog_record.hpp"
#include "expr/block_analysis.hpp"
#include "runtime/cuda_context.hpp"
#include "runtime/forward_plan.hpp"
#include "runtime/sm90_timeline.hpp"
#include "runtime/tensor_map_encoding.hpp"

namespace attnjit::cuda {
namespace {

constexpr std::uintptr_t kVectorAlignment = 16;  // the kernels load rows with 16-byte cp.async
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
  for (const TensorView& view : tensor_views(s, b)) {
    check_strides(view.name, view.strides, element);
    // Note: validate_problem ran first, so the extent fits.
    check_device_buffer(view.name, view.data,
                        static_cast<std::size_t>(view_extent_bytes(view, s, element).value()),
                        kVectorAlignment, device, context);
  }
  if (b.lse != nullptr) {
    // [batch, num_heads_q, q_len], or [num_heads_q, q_total] with packed queries.
    const TensorView out = tensor_views(s, b)[3];
    const std::size_t rows = static_cast<std::size_t>(out.batch) * out.heads * out.len;
    check_device_buffer("lse", b.lse, rows * sizeof(float), alignof(float), device, context);
  }
  if (is_paged(b)) {
    const std::size_t entries = static_cast<std::size_t>(s.batch) * b.kv_pages.table_width;
    check_device_buffer("kv_page_table", b.kv_pages.table, entries * sizeof(std::int32_t),
                        alignof(std::int32_t), device, context);
  }
  const std::size_t starts_bytes = (static_cast<std::size_t>(s.batch) + 1) * sizeof(std::int32_t);
  const SequenceTables& tables = b.sequences;
  if (tables.q_starts != nullptr) {
    check_device_buffer("q_seq_starts", tables.q_starts, starts_bytes, alignof(std::int32_t),
                        device, context);
  }
  if (tables.kv_starts != nullptr) {
    check_device_buffer("kv_seq_starts", tables.kv_starts, starts_bytes, alignof(std::int32_t),
                        device, context);
  }
  if (tables.kv_lens != nullptr) {
    check_device_buffer("kv_seq_lens", tables.kv_lens,
                        static_cast<std::size_t>(s.batch) * sizeof(std::int32_t),
                        alignof(std::int32_t), device, context);
  }
}

void check_grid(const AttentionShape& s, const codegen::KernelConfig& config) {
  const std::int64_t heads = static_cast<std::int64_t>(s.batch) * s.num_heads_q;
  // Note: a persistent grid is one row of at most one block per SM (forward_grid).
  if (!config.persistent && heads > kMaxGridY) {
    throw_error(Status::unsupported,
                "batch * num_heads_q = {} exceeds the {} the kernel's grid allows; split the "
                "batch",
                heads, kMaxGridY);
  }
}

// Set once the driver has refused a programmatic launch that it then took plainly: the process
// launches plainly from then on (an environment without programmatic dependent launch; the
// kernels wait for nothing then, which is always correct).
std::atomic<bool> programmatic_refused{false};

CUresult launch_plain(const driver::DriverApi& d, CUfunction function, const LaunchGrid& grid,
                      CUstream stream, void** params) {
  if (d.cuLaunchKernel == nullptr) driver::throw_missing_symbol("cuLaunchKernel");
  return d.cuLaunchKernel(function, grid.grid_x, grid.grid_y, 1, grid.threads, 1, 1,
                          grid.smem_bytes, stream, params, nullptr);
}

CUresult launch_programmatic(const driver::DriverApi& d, CUfunction function,
                             const LaunchGrid& grid, CUstream stream, void** params) {
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attribute.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid.grid_x;
  config.gridDimY = grid.grid_y;
  config.gridDimZ = 1;
  config.blockDimX = grid.threads;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = grid.smem_bytes;
  config.hStream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return d.cuLaunchKernelEx(&config, function, params, nullptr);
}

// A programmatic launch (`overlap`; grid_dependency.cuh, overlap_launches) goes through
// cuLaunchKernelEx with the programmatic-serialisation attribute; a driver without
// cuLaunchKernelEx (before CUDA 11.8) launches it plainly. One the driver refuses as unsupported
// or invalid (a refused launch queues nothing) is tried again plainly: if that succeeds, the
// attribute was the reason, and programmatic_refused keeps it off for the process (one warning).
void launch(const char* name, CUfunction function, const LaunchGrid& grid, CUstream stream,
            void** params, bool overlap) {
  const driver::DriverApi& d = driver::api();
  overlap = overlap && d.cuLaunchKernelEx != nullptr &&
            !programmatic_refused.load(std::memory_order_relaxed);
  CUresult result = overlap ? launch_programmatic(d, function, grid, stream, params)
                            : launch_plain(d, function, grid, stream, params);
  if (overlap && (result == CUDA_ERROR_NOT_SUPPORTED || result == CUDA_ERROR_INVALID_VALUE)) {
    const CUresult refusal = result;
    result = launch_plain(d, function, grid, stream, params);
    if (result == CUDA_SUCCESS && !programmatic_refused.exchange(true)) {
      log().warn(
          "the CUDA driver refused a programmatic dependent launch of {} ({}) and took it "
          "plainly; every later launch is plain (ATTNJIT_PDL=off silences this)",
          name, driver::describe_result(refusal));
    }
    overlap = false;
  }
  if (result != CUDA_SUCCESS) {
    throw Error(
        driver::status_for_result(result),
        fmt::format("{} failed: {} (kernel {}, grid {}x{}, {} threads, {} bytes of shared "
                    "memory{}){}",
                    overlap ? "cuLaunchKernelEx" : "cuLaunchKernel",
                    driver::describe_result(result), name, grid.grid_x, grid.grid_y, grid.threads,
                    grid.smem_bytes, overlap ? ", programmatic dependent launch" : "",
                    driver::capture_hint(result) + driver::watchdog_hint(result)));
  }
}

// Device scratch for one call's tensor summaries and split-KV partials, held until the last
// kernel reading it (the forward kernel, or the split-KV merge) is queued.
// Outside stream capture it is the (context, stream) workspace, kept locked. During capture it is
// graph-owned memory (cuMemAllocAsync / cuMemFreeAsync on the capturing stream, which become
// allocation and free nodes): the cached workspace cannot be used there, because growing it
// needs cuStreamSynchronize (illegal during capture) and frees a buffer the graph would still
// point at, and graph replays would race with direct calls writing the same buffer.
class CallScratch {
 public:
  CallScratch() = default;
  CallScratch(const CallScratch&) = delete;
  CallScratch& operator=(const CallScratch&) = delete;
  ~CallScratch() {
    // Note: queued after the forward launch (destruction order in forward()), or after a failed
    // one; stream order makes the free wait for every reader.
    if (graph_owned_ != 0 && driver::api().cuMemFreeAsync != nullptr) {
      driver::api().cuMemFreeAsync(graph_owned_, stream_);
    }
  }

  CUdeviceptr acquire(const ContextRef& context, CUstream stream, std::size_t bytes) {
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    ATTNJIT_CU(cuStreamIsCapturing, stream, &capture);
    capturing_ = capture != CU_STREAM_CAPTURE_STATUS_NONE;
    if (!capturing_) {
      auto [workspace, lock] = acquire_workspace(context, stream, bytes);
      lock_ = std::move(lock);
      return workspace->data;
    }
    ATTNJIT_CU(cuMemAllocAsync, &graph_owned_, bytes, stream);
    stream_ = stream;
    return graph_owned_;
  }

  // Whether acquire found the stream capturing into a graph.
  bool capturing() const { return capturing_; }

 private:
  std::unique_lock<std::mutex> lock_;
  bool capturing_ = false;
  CUdeviceptr graph_owned_ = 0;
  CUstream stream_ = nullptr;
};

// Launches the summary kernel for each request into `scratch_ints` (plan.total_ints of the
// call's scratch) and points the copies of the tensor args at the results. The first is the
// call's first launch; with `overlap`, each later one overlaps the one before.
void attach_summaries(CUstream stream, const LoadedKernel& loaded, const SummaryPlan& plan,
                      VariantArgs& args, const int* scratch_ints, bool overlap) {
  if (plan.launches.empty()) return;
  if (loaded.summary == nullptr) {
    throw_error(Status::internal,
                "the mask needs tensor summaries but the kernel module has no "
                "{} entry",
                codegen::kSummaryEntry);
  }
  for (const SummaryLaunch& summary : plan.launches) {
    const int* data = static_cast<const int*>(args.tensors[summary.request.tensor].data);
    int len = summary.len;
    int index_len = summary.index_len;
    int granularity = summary.granularity;
    const int* min_ptr = scratch_ints + summary.offset;
    const int* max_ptr = min_ptr + summary.num_blocks;
    void* params[] = {&data, &len, &index_len, &granularity, &min_ptr, &max_ptr};
    launch(codegen::kSummaryEntry, loaded.summary, summary.grid, stream, params,
           overlap && &summary != &plan.launches.front());
    attach_summary(summary, scratch_ints, args);
  }
}

// The sm90 kernel's argument: the parameters plus the tensor maps, encoded by the driver.
// `shape` and `buffers` are the call's own; `group` its packed GQA group (1: not packed).
Sm90FwdParams make_sm90_params(const FwdParams& base, const AttentionShape& shape,
                               const AttentionBuffers& buffers, const codegen::KernelConfig& config,
                               int group) {
  if (const std::string why = tma_limitation(shape, buffers); !why.empty()) {
    // Note: Variant::forward sends such calls to the sm80 kernel; reaching here is a bug.
    throw_error(Status::internal, "the sm90 kernel cannot load this call with TMA: {}", why);
  }
  const driver::DriverApi& d = driver::api();
  if (d.cuTensorMapEncodeTiled == nullptr) driver::throw_missing_symbol("cuTensorMapEncodeTiled");
  Sm90FwdParams params{};
  params.base = base;
  encode_sm90_tensor_maps(
      shape, buffers, config, group, params, [&](const TensorMapRequest& request, TensorMap& map) {
        driver::check(encode_tensor_map(d.cuTensorMapEncodeTiled, request, &map),
                      "cuTensorMapEncodeTiled");
        apply_small_tensor_map_workaround(map, d.driver_version, tensor_map_span_bytes(request));
      });
  return params;
}

}  // namespace

DeviceInfo current_device() {
  const ContextRef context = current_context();
  return cached_device(context.device);
}

void load(const KernelBinary& kernel) {
  const ContextRef context = current_context();
  load_kernel(context, cached_device(context.device), kernel);
}

void forward(const KernelBinary& kernel, const expr::Expression& mask, const VariantArgs& args,
             const AttentionShape& shape, const AttentionBuffers& buffers, bool hooks_use_heads,
             const LaunchChoices& choices, void* stream_handle) {
  check_dtypes(buffers);
  validate_problem(shape, buffers);
  check_grid(shape, kernel.config);
  // Note: a dense kernel given a paged call would read the pools as one sequence each, a
  // paged kernel given a dense call would read through a null table, and a kernel without
  // sequence tables would run every sequence to the call's q_len and kv_len.
  const bool tables_kernel = codegen::reads_sequence_tables(kernel.config);
  if (has_sequence_tables(buffers) ? !tables_kernel : kernel.config.paged_kv != is_paged(buffers)) {
    throw_error(Status::internal,
                "kernel {} cannot run this call ({}; Variant::forward chooses the kernel of "
                "paged and variable-length calls)",
                kernel.key,
                has_sequence_tables(buffers)
                    ? "variable-length sequences need a kernel with sequence tables"
                : is_paged(buffers) ? "a paged key/value cache needs the kernel with the page table"
                                    : "a dense call on the kernel of a paged key/value cache");
  }

  const ContextRef context = current_context();
  const DeviceInfo device = cached_device(context.device);
  check_buffers(shape, buffers, device, context);
  check_tensor_args(mask.signature(), args, device, context);

  const LoadedKernel& loaded = load_kernel(context, device, kernel);
  use_carveout(loaded, choices.uniform_carveout);
  const codegen::KernelConfig& config = kernel.config;
  auto stream = static_cast<CUstream>(stream_handle);

  // What the kernel launches: the call, or its packed GQA view (a decoding step), on the forward
  // or the decoding entry, split or not; one scratch holds the tensor summaries, then the
  // split-KV partials.
  const ForwardLaunch plan =
      plan_forward_launch(shape, buffers, config, hooks_use_heads, mask,
                          expr::summary_requests(mask), args, device.multiprocessors, choices);
  const SplitPlan& split = plan.split;
  FwdParams params = make_forward_params(plan.shape, plan.buffers, args);
  attach_packing(plan.decoding, shape, buffers, params);
  if (split.num_splits > 1 && loaded.combine == nullptr) {
    throw_error(Status::internal, "a split-KV call needs the {} entry, which the kernel module "
                "lacks", codegen::kSplitCombineEntry);
  }
  const CUfunction entry = plan.decoding.decode_entry ? loaded.decode : loaded.forward;
  if (entry == nullptr) {
    throw_error(Status::internal, "the kernel module lacks the {} entry", plan.entry);
  }
  // Note: destroyed after the launches below, so the scratch is released (unlocked, or freed in
  // stream order) only once the kernels that read it are queued.
  CallScratch scratch;
  const CUdeviceptr scratch_base =
      plan.scratch_bytes > 0 ? scratch.acquire(context, stream, plan.scratch_bytes) : 0;
  // Note: a call of one launch needs no scratch, and needs no overlap either.
  const bool overlap =
      plan.scratch_bytes > 0 && overlap_launches(device.sm, choices, scratch.capturing());
  attach_summaries(stream, loaded, plan.summaries, params.args,
                   reinterpret_cast<const int*>(scratch_base), overlap);
  const bool overlap_forward = overlap && !plan.summaries.launches.empty();
  if (overlap) {
    log().debug(
        "programmatic dependent launches: each kernel after the call's first may start "
        "while the one before still runs");
  }
  SplitCombineParams combine{};
  if (split.num_splits > 1) {
    combine = attach_split(split, shape, buffers, reinterpret_cast<void*>(scratch_base), params);
    log().debug("split-KV: {} for {} query tile(s) x {} head(s)", describe_split(split),
                plan.grid.grid_x, plan.shape.batch * plan.shape.num_heads_q);
  }
  if (plan.decoding.group > 1) {
    log().debug("packed GQA: {} query heads per key/value head", plan.decoding.group);
  }
  if (plan.decoding.decode_entry) {
    log().debug("decoding entry: {}-row blocks of {}-key tiles", plan.decoding.config.block_m,
                plan.decoding.config.block_n);
  }

  static_assert(std::is_trivially_copyable_v<FwdParams> && std::is_standard_layout_v<FwdParams>,
                "FwdParams is copied into the kernel's parameter buffer byte for byte");
  static_assert(std::is_trivially_copyable_v<Sm90FwdParams> &&
                    std::is_standard_layout_v<Sm90FwdParams>,
                "Sm90FwdParams is copied into the kernel's parameter buffer byte for byte");
  static_assert(sizeof(FwdParams) <= 4096, "FwdParams must fit the 4 KB kernel-parameter limit");
  const LaunchGrid& grid = plan.grid;
  if (config.family == codegen::KernelFamily::sm90) {
    Sm90FwdParams sm90 = make_sm90_params(params, shape, buffers, config, plan.decoding.group);
    std::optional<Sm90Timeline> timeline;
    if (config.timeline) {
      timeline.emplace(grid, stream);
      sm90.timeline = timeline->records();
    }
    void* launch_params[] = {&sm90};  // one by-value struct argument, as for the sm80 kernel
    launch(codegen::kForwardEntry, loaded.forward, grid, stream, launch_params, overlap_forward);
    if (timeline) {
      timeline->write(fmt::format(
          "sm90 d{} {}x{}, {} stages, overlap {}, handoff {}, {} block(s) per SM", shape.head_dim,
          config.block_m, config.block_n, config.num_stages, config.overlap ? "on" : "off",
          config.tile_handoff ? "on" : "off", config.blocks_per_sm));
    }
  } else {
    void* launch_params[] = {&params};  // one by-value struct argument: kernelParams[0] = &params
    launch(plan.entry, entry, grid, stream, launch_params, overlap_forward);
  }
  if (split.num_splits > 1) {
    void* combine_params[] = {&combine};
    launch(codegen::kSplitCombineEntry, loaded.combine, split.combine, stream, combine_params,
           overlap);
  }
}

}  // namespace attnjit::cuda
