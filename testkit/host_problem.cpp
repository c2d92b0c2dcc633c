#include "testkit/host_problem.hpp"

#include <limits>

namespace attnjit::testkit {
namespace {

void set_strides(std::int64_t (&into)[3], const Strides& strides) {
  into[0] = strides.batch;
  into[1] = strides.head;
  into[2] = strides.row;
}

}  // namespace

attnjit_forward_args HostProblem::forward_args() {
  // Note: not attnjit_forward_args_init, so that the kit's core links nothing of the library
  // (internal tests link its stages statically); the fields it would set are all set here.
  attnjit_forward_args args{};
  args.version = ATTNJIT_FORWARD_ARGS_VERSION;
  args.layout = ATTNJIT_LAYOUT_BHLD;  // unused: the strides are explicit
  args.q = q.data();
  args.k = k.data();
  args.v = v.data();
  args.out = out.data();
  args.lse = lse.empty() ? nullptr : lse.data();
  args.q_dtype = q.dtype();
  args.k_dtype = k.dtype();
  args.v_dtype = v.dtype();
  args.batch = shape.batch;
  args.num_heads_q = shape.num_heads_q;
  args.num_heads_kv = shape.num_heads_kv;
  args.q_len = shape.q_len;
  args.kv_len = shape.kv_len;
  set_strides(args.q_strides, q.strides());
  set_strides(args.k_strides, k.strides());
  set_strides(args.v_strides, v.strides());
  set_strides(args.out_strides, out.strides());
  args.scale = scale;
  return args;
}

HostProblem make_problem(const Shape& shape, const ProblemOptions& options) {
  HostProblem problem;
  problem.shape = shape;
  problem.scale = options.scale;
  const auto make = [&](int heads, int len) {
    HostTensor tensor(options.dtype, options.layout, shape.batch, heads, len, shape.head_dim,
                      options.row_padding);
    tensor.fill_nan();
    return tensor;
  };
  problem.q = make(shape.num_heads_q, shape.q_len);
  problem.k = make(shape.num_heads_kv, shape.kv_len);
  problem.v = make(shape.num_heads_kv, shape.kv_len);
  problem.out = make(shape.num_heads_q, shape.q_len);
  problem.q.fill_random(derive_seed(options.seed, 1), options.distribution);
  problem.k.fill_random(derive_seed(options.seed, 2), options.distribution);
  problem.v.fill_random(derive_seed(options.seed, 3), options.distribution);
  if (options.with_lse) {
    problem.lse.assign(static_cast<std::size_t>(shape.batch) * shape.num_heads_q * shape.q_len,
                       std::numeric_limits<float>::quiet_NaN());
  }
  return problem;
}

attnjit_forward_args with_values(attnjit_forward_args call,
                                 const std::vector<attnjit_scalar>& params,
                                 const std::vector<attnjit_tensor_arg>& tensors) {
  call.params = params.data();
  call.num_params = static_cast<int>(params.size());
  call.tensors = tensors.data();
  call.num_tensors = static_cast<int>(tensors.size());
  return call;
}

}  // namespace attnjit::testkit
