// The CUDA backend: runs a compiled variant on the caller's current CUDA context and stream.
// Everything here goes through the dlopen'ed driver (driver/cuda_driver.hpp).
#pragma once

#include <string>

#include "attnjit/variant_args.cuh"
#include "common/attention_problem.hpp"
#include "expr/expression.hpp"
#include "jit/variant_compiler.hpp"
#include "runtime/forward_plan.hpp"

namespace attnjit::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int sm = 0;                // major * 10 + minor: 80, 86, 89, 90, 100...
  int smem_optin_bytes = 0;  // largest dynamic shared memory a block may opt in to
  int multiprocessors = 0;
  int l2_bytes = 0;
};

// The device of the calling thread's current context. When no context is current, device 0's
// primary context is retained (once per process) and made current, which is what the CUDA
// runtime does too, so host programs using the runtime share the context with attnjit.
// Throws Error(no_device) without a driver or a device, and Error(unsupported) for compute
// capability below 8.0.
DeviceInfo current_device();

// Runs the forward pass asynchronously on `stream` (a CUstream; null and CU_STREAM_LEGACY are the
// legacy default stream, CU_STREAM_PER_THREAD the calling thread's per-thread stream; the driver
// entry points are the legacy-stream ones whatever the host was compiled with). `args` holds
// device pointers for tensors; summaries the mask needs are computed here on the GPU, on the same
// stream, in a workspace kept per (context, stream) or, while `stream` is being captured into a
// CUDA graph, in graph-owned memory (so a captured call needs no synchronization and the graph
// does not point at a workspace later calls reuse). Note: the first call of a kernel in a context
// loads its module; make it, or load the kernel first (load, Variant::prepare), before a capture.
// Everything is checked before the first launch: dtypes, shapes, that every buffer is device (or
// managed) memory of the current device and context, large enough and 16-byte aligned, and that the
// kernel fits the device. Throws Error with the reason.
// `hooks_use_heads`: the variant's mask or score uses h or num_heads, which rules out packing
// the query heads of a GQA group as rows of one block (runtime/forward_plan.hpp, pack_gqa).
// `choices`: the decoding switches (packing, split-KV, the decoding entry) for this call.
void forward(const KernelBinary& kernel, const expr::Expression& mask, const VariantArgs& args,
             const AttentionShape& shape, const AttentionBuffers& buffers, bool hooks_use_heads,
             const LaunchChoices& choices, void* stream);

// Loads `kernel`'s module into the calling thread's current context (as forward's first call of
// it would; once per context), so that a later call, or a CUDA graph capture, loads nothing.
// Throws Error like forward's load (a device without the shared memory or threads it needs).
void load(const KernelBinary& kernel);

// Unloads every module and frees every workspace attnjit holds. Safe to call more than once; the
// next forward call loads what it needs again. Called at process exit.
void release_resources() noexcept;

}  // namespace attnjit::cuda
