#include "kernel_case.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cstring>

#include "expr/signature.hpp"
#include "failure_dump.hpp"
#include "reference/naive.hpp"

namespace attnjit::kernel_test {
namespace {

using reference::HostTensor;

// Elements of `tensor`'s storage outside its [batch, heads, len, head_dim] view whose bytes differ
// from `before`: the kernel wrote where it must not (row padding, past the last row).
std::int64_t writes_outside_view(const HostTensor& tensor, const std::vector<std::byte>& before,
                                 const AttentionShape& shape, int heads, int len) {
  const std::size_t element = dtype_size(tensor.dtype());
  const auto count = static_cast<std::size_t>(tensor.storage_elements());
  std::vector<bool> in_view(count, false);
  const Strides& s = tensor.strides();
  for (int b = 0; b < shape.batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      for (int row = 0; row < len; ++row) {
        const std::int64_t first = b * s.batch + h * s.head + row * s.row;
        for (int d = 0; d < shape.head_dim; ++d)
          in_view[static_cast<std::size_t>(first + d)] = true;
      }
    }
  }
  const auto* after = static_cast<const std::byte*>(tensor.data());
  std::int64_t changed = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (!in_view[i] &&
        std::memcmp(after + i * element, before.data() + i * element, element) != 0) {
      ++changed;
    }
  }
  return changed;
}

reference::HostProblem make_case_problem(const KernelCase& c, const AttentionShape& shape) {
  reference::ProblemOptions options;
  options.dtype = c.dtype;
  options.layout = c.layout;
  options.row_padding = c.row_padding;
  options.with_lse = c.with_lse;
  options.seed = c.seed;
  options.scale = c.scale;
  return reference::make_problem(shape, options);
}

}  // namespace

std::int32_t float_bits(float value) { return std::bit_cast<std::int32_t>(value); }

std::string KernelCase::name() const {
  std::string text = fmt::format("mask='{}' score='{}'", mask.empty() ? "true" : mask,
                                 score.empty() ? "score" : score);
  for (std::size_t i = 0; i < params.size() && i < scalars.size(); ++i) {
    text += fmt::format(" {}={}", params[i], scalars[i]);
  }
  for (const TensorInput& tensor : tensors) {
    text += fmt::format(" {}[{}x{}]", tensor.decl, tensor.dims[0], tensor.dims[1]);
  }
  for (const PlantedValue& p : planted) {
    text += fmt::format(" {}[{},{},{},{}]={}", p.tensor, p.b, p.h, p.row, p.d, p.value);
  }
  if (split_kv) text += fmt::format(" split_kv={}", *split_kv);
  if (page_size > 0) {
    text += fmt::format(" pages of {}", page_size);
    if (unmapped_tail_pages > 0) text += fmt::format(" ({} unmapped)", unmapped_tail_pages);
  }
  if (sequences) {
    text +=
        fmt::format(" sequences q={} kv={}{}{}", fmt::join(sequences->q_lens, ","),
                    fmt::join(sequences->kv_lens, ","), sequences->pack_queries ? " packed-q" : "",
                    sequences->pack_keys ? " packed-kv" : " kv-lens");
    if (sequences->gap_rows > 0) text += fmt::format(" gap={}", sequences->gap_rows);
  }
  if (graph != Graph::none) {
    text += graph == Graph::cold            ? " graph (cold)"
            : graph == Graph::after_prepare ? " graph (after prepare)"
                                            : " graph";
  }
  return text + fmt::format(" {} {} D={} B={} Hq={} Hkv={} Lq={} Lkv={} pad={} lse={} seed={}",
                            dtype_name(dtype), layout == Layout::bhld ? "bhld" : "blhd", head_dim,
                            shape.batch, shape.num_heads_q, shape.num_heads_kv, shape.q_len,
                            shape.kv_len, row_padding, with_lse ? "on" : "off", seed);
}

bool CaseResult::passed() const {
  return reference::within(out, out_limit) &&
         (lse.count == 0 || reference::within(lse, lse_limit)) && padding_writes == 0;
}

std::string CaseResult::describe() const {
  return fmt::format(
      "out: {} (limit max_abs {:.1e} nmse {:.1e}); lse: {}; writes outside the "
      "output view: {}{}{}",
      reference::describe(out), out_limit.max_abs_error, out_limit.nmse,
      lse.count == 0 ? std::string("off") : reference::describe(lse), padding_writes,
      anatomy.empty() ? std::string() : "\nwhere the output is wrong:\n" + anatomy,
      dump_path.empty() ? std::string() : "\ndump: " + dump_path);
}

VariantSpec make_spec(const KernelCase& c) {
  VariantSpec spec;
  spec.mask = c.mask;
  spec.score = c.score;
  for (const std::string& param : c.params)
    spec.signature.params.push_back(expr::parse_param_decl(param));
  for (const TensorInput& tensor : c.tensors) {
    spec.signature.tensors.push_back(expr::parse_tensor_decl(tensor.decl));
  }
  spec.dtype = c.dtype;
  spec.head_dim = c.head_dim;
  return spec;
}

PreparedCase::PreparedCase(const KernelCase& c)
    : test_case(c),
      spec(make_spec(c)),
      mask(expr::parse_expression(expr::ExprKind::mask, spec.mask, spec.signature)),
      score(expr::parse_expression(expr::ExprKind::score, spec.score, spec.signature)),
      shape([&] {
        AttentionShape s = c.shape;
        s.head_dim = c.head_dim;
        return s;
      }()),
      problem(make_case_problem(c, shape)) {
  for (const PlantedValue& p : c.planted) {
    reference::HostTensor& tensor = p.tensor == 'q'   ? problem.q
                                    : p.tensor == 'k' ? problem.k
                                                      : problem.v;
    tensor.set(p.b, p.h, p.row, p.d, p.value);
  }
  const auto* out = static_cast<const std::byte*>(problem.out.data());
  poisoned_out.assign(out, out + problem.out.storage_bytes());
  for (std::size_t i = 0; i < c.scalars.size(); ++i) host_args.scalars[i] = c.scalars[i];
  for (std::size_t i = 0; i < c.tensors.size(); ++i) {
    const TensorInput& input = c.tensors[i];
    const expr::TensorDecl& decl = spec.signature.tensors[i];
    const bool is_int = decl.elem == expr::TensorElemType::int32;
    TensorArg arg{};
    arg.dims[0] = input.dims[0];
    arg.dims[1] = decl.rank == 2 ? input.dims[1] : 1;
    arg.rank = decl.rank;
    arg.elem = is_int ? kTensorInt32 : kTensorFloat32;
    arg.data = is_int ? static_cast<const void*>(input.ints.data()) : input.floats.data();
    host_args.tensors[i] = arg;
  }
  // Note: before the paged cache, which then copies the poisoned rows past each key count.
  if (c.sequences) packed = std::make_unique<PackedSequences>(problem, c.layout, *c.sequences);
  if (c.page_size > 0) {
    paged = std::make_unique<PagedCache>(
        problem, c.layout, PagedCacheOptions{c.page_size, c.unmapped_tail_pages, c.seed + 17});
  }
}

AttentionBuffers PreparedCase::call_buffers() {
  const AttentionBuffers buffers = paged ? paged->buffers(problem.buffers()) : problem.buffers();
  return packed ? packed->buffers(buffers) : buffers;
}

CaseResult PreparedCase::check(const std::vector<float>& written_lse) {
  const AttentionBuffers host = problem.buffers();
  std::vector<double> expected_out, expected_lse;
  reference::SequenceLengths lengths;
  if (test_case.sequences) lengths = {test_case.sequences->q_lens, test_case.sequences->kv_lens};
  reference::naive_attention(mask, score, host_args, shape, host, expected_out, expected_lse,
                             lengths);
  // Note: packed output rows go back to the padded problem, in the reference's order.
  const std::vector<float> lse = packed ? packed->unpack(problem, written_lse) : written_lse;

  CaseResult result;
  result.out = reference::compare_output(shape, host, expected_out);
  const reference::Tolerance base = reference::output_tolerance(test_case.dtype);
  result.out_limit = {base.max_abs_error * test_case.tolerance_factor,
                      base.nmse * test_case.tolerance_factor};
  result.lse_limit = reference::lse_tolerance();
  if (test_case.with_lse) result.lse = reference::compare_lse(shape, lse.data(), expected_lse);
  result.padding_writes =
      packed && packed->options.pack_queries
          ? packed->gap_writes()
          : writes_outside_view(problem.out, poisoned_out, shape, shape.num_heads_q, shape.q_len);
  if (!result.passed()) {
    const std::vector<double> actual_out = reference::output_values(shape, host);
    const std::vector<double> actual_lse(lse.begin(), lse.end());
    const std::span<const double> no_lse;
    const testkit::AnatomyInput anatomy{
        .batch = shape.batch,
        .heads = shape.num_heads_q,
        .len = shape.q_len,
        .head_dim = shape.head_dim,
        .actual = actual_out,
        .expected = expected_out,
        .actual_lse = test_case.with_lse ? std::span<const double>(actual_lse) : no_lse,
        .expected_lse = test_case.with_lse ? std::span<const double>(expected_lse) : no_lse,
        .tolerance = result.out_limit.max_abs_error,
        .lse_tolerance = result.lse_limit.max_abs_error};
    result.anatomy = testkit::describe_error_anatomy(anatomy);
    const FailureRecord record{
        *this, result, test_case.with_lse ? std::span<const float>(lse) : std::span<const float>(),
        expected_out, test_case.with_lse ? std::span<const double>(expected_lse) : no_lse};
    if (std::optional<std::string> path = dump_failure(record)) result.dump_path = *path;
  }
  return result;
}

}  // namespace attnjit::kernel_test
