#include "testkit/internal/random_inputs.hpp"

namespace attnjit::reference {
namespace {

attnjit_layout c_layout(Layout layout) {
  return layout == Layout::bhld ? ATTNJIT_LAYOUT_BHLD : ATTNJIT_LAYOUT_BLHD;
}

Strides library_strides(const testkit::Strides& strides) {
  return {strides.batch, strides.head, strides.row};
}

}  // namespace

void fill_random(void* data, DType dtype, std::int64_t count, std::uint64_t seed,
                 Distribution distribution) {
  testkit::fill_random(data, c_dtype(dtype), count, seed, distribution);
}

void fill_nan(void* data, DType dtype, std::int64_t count) {
  testkit::fill_nan(data, c_dtype(dtype), count);
}

Strides padded_strides(Layout layout, int heads, int len, int head_dim, int row_padding) {
  return library_strides(
      testkit::padded_strides(c_layout(layout), heads, len, head_dim, row_padding));
}

HostTensor::HostTensor(DType dtype, Layout layout, int batch, int heads, int len, int head_dim,
                       int row_padding)
    : testkit::HostTensor(c_dtype(dtype), c_layout(layout), batch, heads, len, head_dim,
                          row_padding) {}

Strides HostTensor::strides() const { return library_strides(testkit::HostTensor::strides()); }

AttentionBuffers HostProblem::buffers() {
  AttentionBuffers result;
  result.q = q.data();
  result.k = k.data();
  result.v = v.data();
  result.out = out.data();
  result.lse = lse.empty() ? nullptr : lse.data();
  result.q_dtype = q.dtype();
  result.k_dtype = k.dtype();
  result.v_dtype = v.dtype();
  result.q_strides = q.strides();
  result.k_strides = k.strides();
  result.v_strides = v.strides();
  result.out_strides = out.strides();
  result.scale = scale;
  return result;
}

HostProblem make_problem(const AttentionShape& shape, const ProblemOptions& options) {
  testkit::ProblemOptions kit_options;
  kit_options.dtype = c_dtype(options.dtype);
  kit_options.layout = c_layout(options.layout);
  kit_options.row_padding = options.row_padding;
  kit_options.with_lse = options.with_lse;
  kit_options.seed = options.seed;
  kit_options.distribution = options.distribution;
  kit_options.scale = options.scale;
  testkit::HostProblem kit =
      testkit::make_problem({shape.batch, shape.num_heads_q, shape.num_heads_kv, shape.q_len,
                             shape.kv_len, shape.head_dim},
                            kit_options);
  HostProblem problem;
  problem.shape = shape;
  problem.q = HostTensor(std::move(kit.q));
  problem.k = HostTensor(std::move(kit.k));
  problem.v = HostTensor(std::move(kit.v));
  problem.out = HostTensor(std::move(kit.out));
  problem.lse = std::move(kit.lse);
  problem.scale = kit.scale;
  return problem;
}

}  // namespace attnjit::reference
