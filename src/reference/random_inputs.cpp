#include "reference/random_inputs.hpp"

#include <cmath>
#include <limits>
#include <numbers>

#include "common/error.hpp"
#include "common/half.hpp"

namespace attnjit::reference {
namespace {

// splitmix64: tiny, fast and well mixed; each output depends only on the seed and the position.
class Generator {
 public:
  explicit Generator(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in (0, 1): 53 random bits, offset by half a step so 0 never comes out.
  double open_unit() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1p-53; }

  double draw(Distribution distribution) {
    if (distribution == Distribution::uniform) return 2.0 * open_unit() - 1.0;
    // Box-Muller, one value per pair of draws: simple and reproducible.
    const double radius = std::sqrt(-2.0 * std::log(open_unit()));
    return radius * std::cos(2.0 * std::numbers::pi * open_unit());
  }

 private:
  std::uint64_t state_;
};

// Different streams for different purposes from one user seed.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  Generator mixer(seed ^ (stream * 0xD1B54A32D192ED03ull));
  return mixer.next();
}

float nonzero_value(Generator& generator, Distribution distribution, DType dtype) {
  for (;;) {
    const float value = round_to_dtype(static_cast<float>(generator.draw(distribution)), dtype);
    if (value != 0.0f) return value;
  }
}

}  // namespace

void fill_random(void* data, DType dtype, std::int64_t count, std::uint64_t seed,
                 Distribution distribution) {
  Generator generator(seed);
  for (std::int64_t i = 0; i < count; ++i) {
    store_from_float(data, dtype, i, nonzero_value(generator, distribution, dtype));
  }
}

void fill_nan(void* data, DType dtype, std::int64_t count) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::int64_t i = 0; i < count; ++i) store_from_float(data, dtype, i, nan);
}

Strides padded_strides(Layout layout, int heads, int len, int head_dim, int row_padding) {
  // Note: in 64 bits from the first product; heads * len alone can overflow int.
  const std::int64_t row = static_cast<std::int64_t>(head_dim) + row_padding;
  const std::int64_t h = heads, rows = len;
  if (layout == Layout::bhld) return {h * rows * row, rows * row, row};
  return {rows * h * row, row, h * row};
}

namespace {

// Refuses negative sizes, and sizes whose byte count overflows (where the strides themselves
// would), before anything is computed from them.
void check_host_tensor_size(DType dtype, int batch, int heads, int len, int head_dim,
                            int row_padding) {
  if (batch < 0 || heads < 0 || len < 0 || head_dim < 0 || row_padding < 0) {
    throw_error(Status::invalid_argument,
                "host tensor: negative size [{}, {}, {}, {}] or row padding {}", batch, heads, len,
                head_dim, row_padding);
  }
  std::int64_t bytes = static_cast<std::int64_t>(dtype_size(dtype));
  for (const std::int64_t factor : {std::int64_t{batch}, std::int64_t{heads}, std::int64_t{len},
                                    std::int64_t{head_dim} + row_padding}) {
    if (__builtin_mul_overflow(bytes, factor, &bytes)) {
      throw_error(Status::out_of_memory,
                  "host tensor [{}, {}, {}, {}] (row padding {}) is too large to allocate", batch,
                  heads, len, head_dim, row_padding);
    }
  }
}

}  // namespace

HostTensor::HostTensor(DType dtype, Layout layout, int batch, int heads, int len, int head_dim,
                       int row_padding)
    : dtype_(dtype),
      batch_(batch),
      heads_(heads),
      len_(len),
      head_dim_(head_dim),
      strides_((check_host_tensor_size(dtype, batch, heads, len, head_dim, row_padding),
                padded_strides(layout, heads, len, head_dim, row_padding))) {
  storage_.resize(static_cast<std::size_t>(batch * strides_.batch) * dtype_size(dtype));
}

std::int64_t HostTensor::storage_elements() const {
  return static_cast<std::int64_t>(storage_.size() / dtype_size(dtype_));
}

float HostTensor::at(int b, int h, int row, int d) const {
  return load_as_float(data(), dtype_,
                       b * strides_.batch + h * strides_.head + row * strides_.row + d);
}

void HostTensor::set(int b, int h, int row, int d, float value) {
  store_from_float(data(), dtype_, b * strides_.batch + h * strides_.head + row * strides_.row + d,
                   value);
}

void HostTensor::fill_random(std::uint64_t seed, Distribution distribution) {
  Generator generator(seed);
  for (int b = 0; b < batch_; ++b) {
    for (int h = 0; h < heads_; ++h) {
      for (int row = 0; row < len_; ++row) {
        const std::int64_t offset = b * strides_.batch + h * strides_.head + row * strides_.row;
        for (int d = 0; d < head_dim_; ++d) {
          store_from_float(data(), dtype_, offset + d,
                           nonzero_value(generator, distribution, dtype_));
        }
      }
    }
  }
}

void HostTensor::fill_nan() { reference::fill_nan(data(), dtype_, storage_elements()); }

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

}  // namespace attnjit::reference
