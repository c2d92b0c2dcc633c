// Host buffers for attention problems: strided allocation, reproducible random fill and NaN
// poisoning. Used by the reference tests, `attnjit run` and the GPU tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/attention_problem.hpp"

namespace attnjit::reference {

enum class Distribution {
  normal,   // mean 0, standard deviation 1
  uniform,  // in [-1, 1)
};

// Fills `count` elements of `dtype` with values drawn from `seed`: the same seed gives the same
// values on every platform (own generator, not <random>'s distributions, whose output is
// implementation-defined). Values are rounded to `dtype` and never exactly zero.
void fill_random(void* data, DType dtype, std::int64_t count, std::uint64_t seed,
                 Distribution distribution = Distribution::normal);

// Fills `count` elements of `dtype` with a quiet NaN, so that any element a computation fails to
// write is visible.
void fill_nan(void* data, DType dtype, std::int64_t count);

// A host tensor of shape [batch, heads, len, head_dim] in one of the two layouts, optionally with
// `row_padding` unused elements after every row of head_dim (so strides are not contiguous).
class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(DType dtype, Layout layout, int batch, int heads, int len, int head_dim,
             int row_padding = 0);

  DType dtype() const { return dtype_; }
  const Strides& strides() const { return strides_; }
  void* data() { return storage_.data(); }
  const void* data() const { return storage_.data(); }
  std::int64_t storage_elements() const;  // padding included
  std::size_t storage_bytes() const { return storage_.size(); }

  // Element (b, h, row, d) widened to float.
  float at(int b, int h, int row, int d) const;
  // Element (b, h, row, d) = value, rounded to the dtype (tests plant NaN and inf this way).
  void set(int b, int h, int row, int d, float value);

  // The logical elements, padding skipped; the padding keeps what it had (NaN after fill_nan).
  void fill_random(std::uint64_t seed, Distribution distribution = Distribution::normal);
  void fill_nan();  // padding included

 private:
  DType dtype_ = DType::fp32;
  int batch_ = 0, heads_ = 0, len_ = 0, head_dim_ = 0;
  Strides strides_;
  std::vector<std::byte> storage_;
};

// Strides of a [batch, heads, len, head_dim] tensor whose rows are head_dim + row_padding apart.
Strides padded_strides(Layout layout, int heads, int len, int head_dim, int row_padding);

struct ProblemOptions {
  DType dtype = DType::bf16;
  Layout layout = Layout::bhld;
  int row_padding = 0;  // unused elements after each row of every tensor (poisoned with NaN)
  bool with_lse = true;
  std::uint64_t seed = 1;
  Distribution distribution = Distribution::normal;
  float scale = 0.0f;  // 0 means 1/sqrt(head_dim)
};

// A complete host problem: q, k, v random (independent streams derived from the seed), out
// and lse poisoned with NaN, padding poisoned with NaN everywhere.
struct HostProblem {
  AttentionShape shape;
  HostTensor q, k, v, out;
  std::vector<float> lse;  // empty when not requested
  float scale = 0.0f;

  // Pointers into this object: valid while it lives and is not moved.
  AttentionBuffers buffers();
};

HostProblem make_problem(const AttentionShape& shape, const ProblemOptions& options = {});

}  // namespace attnjit::reference
