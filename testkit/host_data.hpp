// Host tensors for attention problems, in the public API's types (attnjit.h): reproducible random
// fill, NaN poisoning, strided [batch, heads, len, head_dim] storage. Part of the test kit
// (testkit/CMakeLists.txt says what the kit is and who uses it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "attnjit/attnjit.h"

namespace attnjit::testkit {

std::size_t dtype_size(attnjit_dtype dtype);        // 2 or 4
const char* dtype_name(attnjit_dtype dtype);        // "bfloat16", "float16", "float32"
const char* dtype_short_name(attnjit_dtype dtype);  // "bf16", "fp16", "fp32"

enum class Distribution {
  normal,   // mean 0, standard deviation 1
  uniform,  // in [-1, 1)
};

// A seed for stream `stream` (q, k, v, ...) derived from one user seed, so that each stream is
// independent of the others.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream);

// Fills `count` elements of `dtype` with values drawn from `seed`: the same seed gives the same
// values on every platform (own generator, not <random>'s distributions, whose output is
// implementation-defined). Values are rounded to `dtype` and never exactly zero.
void fill_random(void* data, attnjit_dtype dtype, std::int64_t count, std::uint64_t seed,
                 Distribution distribution = Distribution::normal);

// A seed for stream `stream` (q, k, v, ...) derived from one user seed, so that each stream is
// independent of the others.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream);

// Fills `count` elements of `dtype` with a quiet NaN, so that any element a computation fails to
// write is visible.
void fill_nan(void* data, attnjit_dtype dtype, std::int64_t count);

// Element `index` of a buffer of `dtype`, widened to float.
float load_as_float(const void* data, attnjit_dtype dtype, std::int64_t index);

// Strides in elements (as attnjit_forward_args takes them); the head-dim stride is 1.
struct Strides {
  std::int64_t batch = 0;
  std::int64_t head = 0;
  std::int64_t row = 0;
};

// Strides of a [batch, heads, len, head_dim] tensor whose rows are head_dim + row_padding apart.
Strides padded_strides(attnjit_layout layout, int heads, int len, int head_dim, int row_padding);

// A host tensor of shape [batch, heads, len, head_dim] in one of the two layouts, optionally with
// `row_padding` unused elements after every row of head_dim (so strides are not contiguous).
class HostTensor {
 public:
  HostTensor() = default;
  // Throws attnjit::c::Error (invalid argument) for a negative size, (out of memory) for one
  // whose byte count overflows.
  HostTensor(attnjit_dtype dtype, attnjit_layout layout, int batch, int heads, int len,
             int head_dim, int row_padding = 0);

  attnjit_dtype dtype() const { return dtype_; }
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
  attnjit_dtype dtype_ = ATTNJIT_DTYPE_FP32;
  int batch_ = 0, heads_ = 0, len_ = 0, head_dim_ = 0;
  Strides strides_;
  std::vector<std::byte> storage_;
};

}  // namespace attnjit::testkit
