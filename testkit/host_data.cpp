#include "testkit/host_data.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <thread>
#include <vector>

#include "attnjit/attnjit.hpp"
// Note: header-only; the kit rounds exactly as the library does, and links nothing of it.
#include "common/half.hpp"

namespace attnjit::testkit {
namespace {

// Note: attnjit_dtype and the library's DType list bf16, fp16, fp32 with the same values.
DType library_dtype(attnjit_dtype dtype) { return static_cast<DType>(dtype); }

constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

// splitmix64: tiny, fast and well mixed; each output depends only on the seed and the position.
class Generator {
 public:
  explicit Generator(std::uint64_t seed) : state_(seed) {}
  // The generator whose first draw is draw `position` of Generator(seed).
  static Generator at(std::uint64_t seed, std::uint64_t position) {
    return Generator(seed + position * kGoldenGamma);
  }

  std::uint64_t next() {
    std::uint64_t z = (state_ += kGoldenGamma);
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

float rounded_draw(Generator& generator, Distribution distribution, attnjit_dtype dtype) {
  return round_to_dtype(static_cast<float>(generator.draw(distribution)), library_dtype(dtype));
}

// Value `index` of a fill from `seed`: from the generator's draws at the value's own positions
// (one a value for the uniform distribution, two for the normal), so that any part of a tensor
// is filled on its own, in parallel, with the values a sequential fill gives. A value that
// rounds to zero (far rarer than one in 2^64 draws) is drawn again from a stream of its own.
float nonzero_value_at(std::uint64_t seed, std::int64_t index, Distribution distribution,
                       attnjit_dtype dtype) {
  const std::uint64_t draws = distribution == Distribution::normal ? 2 : 1;
  Generator generator = Generator::at(seed, static_cast<std::uint64_t>(index) * draws);
  float value = rounded_draw(generator, distribution, dtype);
  if (value != 0.0f) return value;
  Generator again(derive_seed(seed, static_cast<std::uint64_t>(index)));
  while (value == 0.0f) value = rounded_draw(again, distribution, dtype);
  return value;
}

// Runs fill(begin, end) over [0, count) in parallel chunks. Note: a serving-sized test's keys
// and values (8 caches of 32K rows) are half a billion values, a minute of Box-Muller on one
// core; small fills stay on the calling thread.
void for_each_chunk(std::int64_t count,
                    const std::function<void(std::int64_t, std::int64_t)>& fill) {
  constexpr std::int64_t kMinChunk = std::int64_t{1} << 20;
  const std::int64_t cores = std::max<std::int64_t>(1, std::thread::hardware_concurrency());
  const std::int64_t threads = std::clamp<std::int64_t>(count / kMinChunk, 1, cores);
  if (threads == 1) {
    fill(0, count);
    return;
  }
  std::vector<std::thread> workers;
  const std::int64_t chunk = (count + threads - 1) / threads;
  for (std::int64_t begin = 0; begin < count; begin += chunk) {
    workers.emplace_back(fill, begin, std::min(count, begin + chunk));
  }
  for (std::thread& worker : workers) worker.join();
}

void store(void* data, attnjit_dtype dtype, std::int64_t index, float value) {
  store_from_float(data, library_dtype(dtype), index, value);
}

// Refuses negative sizes, and sizes whose byte count overflows (where the strides themselves
// would), before anything is computed from them.
void check_host_tensor_size(attnjit_dtype dtype, int batch, int heads, int len, int head_dim,
                            int row_padding) {
  const std::string shape = "[" + std::to_string(batch) + ", " + std::to_string(heads) + ", " +
                            std::to_string(len) + ", " + std::to_string(head_dim) +
                            "] (row padding " + std::to_string(row_padding) + ")";
  if (batch < 0 || heads < 0 || len < 0 || head_dim < 0 || row_padding < 0) {
    throw c::Error(ATTNJIT_ERROR_INVALID_ARGUMENT, "host tensor: negative size " + shape);
  }
  std::int64_t bytes = static_cast<std::int64_t>(dtype_size(dtype));
  for (const std::int64_t factor : {std::int64_t{batch}, std::int64_t{heads}, std::int64_t{len},
                                    std::int64_t{head_dim} + row_padding}) {
    if (__builtin_mul_overflow(bytes, factor, &bytes)) {
      throw c::Error(ATTNJIT_ERROR_OUT_OF_MEMORY,
                     "host tensor " + shape + " is too large to allocate");
    }
  }
}

}  // namespace

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  Generator mixer(seed ^ (stream * 0xD1B54A32D192ED03ull));
  return mixer.next();
}

std::size_t dtype_size(attnjit_dtype dtype) { return dtype == ATTNJIT_DTYPE_FP32 ? 4 : 2; }

const char* dtype_name(attnjit_dtype dtype) {
  switch (dtype) {
    case ATTNJIT_DTYPE_BF16:
      return "bfloat16";
    case ATTNJIT_DTYPE_FP16:
      return "float16";
    case ATTNJIT_DTYPE_FP32:
      return "float32";
  }
  return "unknown dtype";
}

const char* dtype_short_name(attnjit_dtype dtype) {
  switch (dtype) {
    case ATTNJIT_DTYPE_BF16:
      return "bf16";
    case ATTNJIT_DTYPE_FP16:
      return "fp16";
    case ATTNJIT_DTYPE_FP32:
      return "fp32";
  }
  return "unknown dtype";
}

void fill_random(void* data, attnjit_dtype dtype, std::int64_t count, std::uint64_t seed,
                 Distribution distribution) {
  for_each_chunk(count, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      store(data, dtype, i, nonzero_value_at(seed, i, distribution, dtype));
    }
  });
}

void fill_nan(void* data, attnjit_dtype dtype, std::int64_t count) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::int64_t i = 0; i < count; ++i) store(data, dtype, i, nan);
}

float load_as_float(const void* data, attnjit_dtype dtype, std::int64_t index) {
  return attnjit::load_as_float(data, library_dtype(dtype), index);
}

Strides padded_strides(attnjit_layout layout, int heads, int len, int head_dim, int row_padding) {
  // Note: in 64 bits from the first product; heads * len alone can overflow int.
  const std::int64_t row = static_cast<std::int64_t>(head_dim) + row_padding;
  const std::int64_t h = heads, rows = len;
  if (layout == ATTNJIT_LAYOUT_BHLD) return {h * rows * row, rows * row, row};
  return {rows * h * row, row, h * row};
}

HostTensor::HostTensor(attnjit_dtype dtype, attnjit_layout layout, int batch, int heads, int len,
                       int head_dim, int row_padding)
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
  store(data(), dtype_, b * strides_.batch + h * strides_.head + row * strides_.row + d, value);
}

void HostTensor::fill_random(std::uint64_t seed, Distribution distribution) {
  // Value i of the fill goes to logical element i: (b, h, row, d) in that order, padding skipped.
  const std::int64_t heads = heads_, len = len_, head_dim = head_dim_;
  for_each_chunk(batch_ * heads * len * head_dim, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t row = i / head_dim;
      const std::int64_t offset = row / (heads * len) * strides_.batch +
                                  row / len % heads * strides_.head + row % len * strides_.row;
      store(data(), dtype_, offset + i % head_dim, nonzero_value_at(seed, i, distribution, dtype_));
    }
  });
}

void HostTensor::fill_nan() { testkit::fill_nan(data(), dtype_, storage_elements()); }

}  // namespace attnjit::testkit
