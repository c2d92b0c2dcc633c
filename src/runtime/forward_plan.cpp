#include "runtime/forward_plan.hpp"

namespace attnjit {
namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace

LaunchGrid forward_grid(const AttentionShape& shape, const codegen::KernelConfig& config) {
  LaunchGrid grid;
  grid.grid_x = static_cast<unsigned>(ceil_div(shape.q_len, config.block_m));
  grid.grid_y = static_cast<unsigned>(shape.batch * shape.num_heads_q);
  grid.threads = static_cast<unsigned>(config.num_warps * 32);
  grid.smem_bytes = static_cast<unsigned>(config.smem_bytes);
  return grid;
}

FwdParams make_forward_params(const AttentionShape& shape, const AttentionBuffers& buffers,
                              const VariantArgs& args) {
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
  return params;
}

SummaryPlan plan_summaries(const std::vector<expr::SummaryRequest>& requests,
                           const AttentionShape& shape, const codegen::KernelConfig& config,
                           const VariantArgs& args) {
  SummaryPlan plan;
  for (const expr::SummaryRequest& request : requests) {
    const bool q_axis = request.axis == expr::SummaryAxis::q;
    SummaryLaunch launch;
    launch.request = request;
    launch.len = args.tensors[request.tensor].dims[0];
    launch.index_len = q_axis ? shape.q_len : shape.kv_len;
    launch.granularity = q_axis ? config.block_m : config.block_n;
    launch.num_blocks = ceil_div(launch.index_len, launch.granularity);
    launch.offset = plan.total_ints;
    // Note: one thread per summary block (see docs/KERNELS.md).
    launch.grid.grid_x = static_cast<unsigned>(ceil_div(launch.num_blocks, kSummaryThreads));
    launch.grid.threads = kSummaryThreads;
    plan.total_ints += 2 * static_cast<std::size_t>(launch.num_blocks);
    plan.launches.push_back(launch);
  }
  return plan;
}

void attach_summary(const SummaryLaunch& launch, const int* scratch, VariantArgs& args) {
  TensorArg& tensor = args.tensors[launch.request.tensor];
  const int* min = scratch + launch.offset;
  const TensorSummary summary{min, min + launch.num_blocks, launch.granularity, launch.num_blocks};
  (launch.request.axis == expr::SummaryAxis::q ? tensor.q_summary : tensor.kv_summary) = summary;
}

}  // namespace attnjit
