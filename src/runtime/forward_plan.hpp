// What a forward call launches, as pure host data: the kernel's parameter block, the grid, and
// the tensor-summary launches the mask needs. The CUDA backend launches it through the driver;
// the SIMT emulator of tests/simt launches the very same plan on the host, so the tests exercise
// the parameters the GPU receives.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attnjit/fwd_params.cuh"
#include "codegen/variant_source.hpp"
#include "common/attention_problem.hpp"
#include "expr/block_analysis.hpp"

namespace attnjit {

constexpr int kSummaryThreads = 256;  // threads per block of the summary kernel

struct LaunchGrid {
  unsigned grid_x = 1;
  unsigned grid_y = 1;
  unsigned threads = 1;
  unsigned smem_bytes = 0;
};

// A plain kernel: x = query tiles, y = batch * num_heads_q (the kernel re-maps the linear block
// index itself). A persistent one (config.persistent): x = min(work items, multiprocessors), one
// block per SM walking the query tiles of every (batch, head), y = 1.
LaunchGrid forward_grid(const AttentionShape& shape, const codegen::KernelConfig& config,
                        int multiprocessors);

// The parameter block, with the args' tensor summaries still empty (see SummaryLaunch).
FwdParams make_forward_params(const AttentionShape& shape, const AttentionBuffers& buffers,
                              const VariantArgs& args);

// The sm90 kernel's tensor maps, as the arguments of cuTensorMapEncodeTiled (the encoding itself
// is the driver's: runtime/tensor_map_encoding.hpp). One per input: Q, K, V.
struct TensorMapRequest {
  const void* address = nullptr;
  DType dtype = DType::bf16;
  std::uint64_t dims[4] = {};     // head_dim, len, heads, batch (innermost first)
  std::uint64_t strides[3] = {};  // bytes between rows, heads, batches
  std::uint32_t box[4] = {};      // 64 columns, rows, 1, 1
};

// Why TMA cannot load this call's Q, K or V, or empty when it can: TMA needs 16-byte aligned
// bases and strides that are positive multiples of 16 bytes below 2^40 (a dimension of extent 1
// is exempt: its stride is never used).
std::string tma_limitation(const AttentionShape& shape, const AttentionBuffers& buffers);

// Q, K, V maps for the sm90 kernel of `config`; the call must have no tma_limitation.
std::array<TensorMapRequest, 3> sm90_tensor_maps(const AttentionShape& shape,
                                                 const AttentionBuffers& buffers,
                                                 const codegen::KernelConfig& config);

// One summary kernel launch: min/max of args.tensors[tensor] over blocks of `granularity`
// indices (the forward kernel's tile size along `axis`), written at `offset` ints into a
// scratch buffer of SummaryPlan::total_ints: num_blocks minima, then num_blocks maxima.
struct SummaryLaunch {
  expr::SummaryRequest request;
  int len = 0;  // elements of the tensor
  int index_len = 0;
  int granularity = 0;
  int num_blocks = 0;
  std::size_t offset = 0;
  LaunchGrid grid;
};

struct SummaryPlan {
  std::vector<SummaryLaunch> launches;
  std::size_t total_ints = 0;
};

SummaryPlan plan_summaries(const std::vector<expr::SummaryRequest>& requests,
                           const AttentionShape& shape, const codegen::KernelConfig& config,
                           const VariantArgs& args);

// Points the summary of `launch`'s tensor in `args` at its results inside `scratch` (an int
// array of plan.total_ints, in the memory the kernels will read).
void attach_summary(const SummaryLaunch& launch, const int* scratch, VariantArgs& args);

}  // namespace attnjit
