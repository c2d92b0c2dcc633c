#include "common/half.hpp"

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace attnjit;

namespace {

struct Format {
  const char* name;
  float (*to_float)(std::uint16_t);
  std::uint16_t (*from_float)(float);
  std::uint16_t infinity;  // bit pattern of +inf
  double overflow_value;   // the value +inf stands for when rounding: 2^(emax + 1)
};

const Format kBf16{"bf16", bf16_bits_to_float, float_to_bf16_bits, 0x7F80, 0x1p128};
const Format kFp16{"fp16", fp16_bits_to_float, float_to_fp16_bits, 0x7C00, 0x1p16};

bool is_nan_bits(const Format& format, std::uint16_t bits) {
  return (bits & 0x7FFF) > format.infinity;
}

// Round to nearest, ties to even, done the slow obvious way: search the sorted table of
// non-negative values of the format and pick the closer neighbour.
class SlowRounder {
 public:
  explicit SlowRounder(const Format& format) : format_(format) {
    for (std::uint32_t bits = 0; bits <= format.infinity; ++bits) {
      values_.push_back(bits == format.infinity ? format.overflow_value
                                                : static_cast<double>(format.to_float(
                                                      static_cast<std::uint16_t>(bits))));
    }
  }

  std::uint16_t round(float value) const {
    const double magnitude = std::abs(static_cast<double>(value));
    const std::uint16_t sign = std::signbit(value) ? 0x8000 : 0;
    if (std::isinf(value)) return static_cast<std::uint16_t>(sign | format_.infinity);
    const auto upper = std::lower_bound(values_.begin(), values_.end(), magnitude);
    if (upper == values_.end()) return static_cast<std::uint16_t>(sign | format_.infinity);
    auto index = static_cast<std::uint16_t>(upper - values_.begin());
    if (*upper != magnitude) {
      const double above = *upper - magnitude;
      const double below = magnitude - *(upper - 1);
      if (below < above || (below == above && ((index - 1) & 1) == 0)) --index;
    }
    return static_cast<std::uint16_t>(sign | index);
  }

 private:
  Format format_;
  std::vector<double> values_;
};

float random_float(std::uint64_t& state) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return std::bit_cast<float>(static_cast<std::uint32_t>(state >> 32));
}

}  // namespace

TEST_CASE("every 16-bit pattern survives a round trip through float") {
  const Format format = GENERATE(kBf16, kFp16);
  INFO(format.name);
  int mismatches = 0;
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto original = static_cast<std::uint16_t>(bits);
    const float widened = format.to_float(original);
    const std::uint16_t back = format.from_float(widened);
    if (is_nan_bits(format, original)) {
      // NaNs stay NaN with their sign; a signalling NaN comes back quiet.
      if (!std::isnan(widened) || !is_nan_bits(format, back) ||
          (back & 0x8000) != (bits & 0x8000)) {
        ++mismatches;
      }
    } else if (back != original) {
      ++mismatches;
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("conversions to 16 bits round to nearest with ties to even") {
  const Format format = GENERATE(kBf16, kFp16);
  INFO(format.name);
  int wrong_tie = 0, wrong_near = 0;
  // Every pair of adjacent non-negative finite values, the top one paired with infinity, and the
  // same negated. Midpoints and their float neighbours are exact in float.
  for (std::uint32_t bits = 0; bits < format.infinity; ++bits) {
    const double low = format.to_float(static_cast<std::uint16_t>(bits));
    const double high = bits + 1 == format.infinity
                            ? format.overflow_value
                            : format.to_float(static_cast<std::uint16_t>(bits + 1));
    const double mid = (low + high) / 2;
    if (mid > std::numeric_limits<float>::max()) continue;
    const auto midpoint = static_cast<float>(mid);
    REQUIRE(static_cast<double>(midpoint) == mid);
    const auto even = static_cast<std::uint16_t>((bits & 1) == 0 ? bits : bits + 1);
    for (const float sign : {1.0f, -1.0f}) {
      const std::uint16_t sign_bit = sign < 0 ? 0x8000 : 0;
      if (format.from_float(sign * midpoint) != (even | sign_bit)) ++wrong_tie;
      const float just_below = std::nextafter(midpoint, 0.0f);
      const float just_above = std::nextafter(midpoint, std::numeric_limits<float>::infinity());
      if (format.from_float(sign * just_below) != (bits | sign_bit)) ++wrong_near;
      if (format.from_float(sign * just_above) != ((bits + 1) | sign_bit)) ++wrong_near;
    }
  }
  CHECK(wrong_tie == 0);
  CHECK(wrong_near == 0);
}

TEST_CASE("conversions to 16 bits agree with a slow nearest-value search") {
  const Format format = GENERATE(kBf16, kFp16);
  INFO(format.name);
  const SlowRounder slow(format);
  std::uint64_t state = 12345;
  int mismatches = 0;
  for (int i = 0; i < 2'000'000; ++i) {
    const float value = random_float(state);
    if (std::isnan(value)) continue;
    if (format.from_float(value) != slow.round(value)) ++mismatches;
  }
  CHECK(mismatches == 0);
}

#if defined(__FLT16_MAX__)
TEST_CASE("fp16 conversions agree with the compiler's _Float16") {
  std::uint64_t state = 777;
  int mismatches = 0;
  for (int i = 0; i < 4'000'000; ++i) {
    const float value = random_float(state);
    if (std::isnan(value)) continue;
    const auto native = std::bit_cast<std::uint16_t>(static_cast<_Float16>(value));
    if (float_to_fp16_bits(value) != native) ++mismatches;
  }
  CHECK(mismatches == 0);
}
#endif

TEST_CASE("special values convert exactly") {
  const float inf = std::numeric_limits<float>::infinity();
  SECTION("bf16") {
    CHECK(float_to_bf16_bits(0.0f) == 0x0000);
    CHECK(float_to_bf16_bits(-0.0f) == 0x8000);
    CHECK(float_to_bf16_bits(1.0f) == 0x3F80);
    CHECK(float_to_bf16_bits(inf) == 0x7F80);
    CHECK(float_to_bf16_bits(-inf) == 0xFF80);
    CHECK(float_to_bf16_bits(std::numeric_limits<float>::max()) == 0x7F80);  // rounds up
    CHECK(float_to_bf16_bits(std::numeric_limits<float>::denorm_min()) == 0x0000);
    CHECK(float_to_bf16_bits(0x1p-130f) == 0x0008);  // a float subnormal kept as bf16 subnormal
    // A NaN whose payload is only in the low 16 bits stays a NaN.
    const float low_payload_nan = std::bit_cast<float>(0x7F800001u);
    CHECK(std::isnan(bf16_bits_to_float(float_to_bf16_bits(low_payload_nan))));
    const float negative_nan = std::bit_cast<float>(0xFFC00000u);
    CHECK(float_to_bf16_bits(negative_nan) == 0xFFC0);
  }
  SECTION("fp16") {
    CHECK(float_to_fp16_bits(0.0f) == 0x0000);
    CHECK(float_to_fp16_bits(-0.0f) == 0x8000);
    CHECK(float_to_fp16_bits(1.0f) == 0x3C00);
    CHECK(float_to_fp16_bits(65504.0f) == 0x7BFF);
    CHECK(float_to_fp16_bits(65519.996f) == 0x7BFF);
    CHECK(float_to_fp16_bits(65520.0f) == 0x7C00);  // the tie goes to (even) infinity
    CHECK(float_to_fp16_bits(-1e9f) == 0xFC00);
    CHECK(float_to_fp16_bits(0x1p-24f) == 0x0001);  // smallest subnormal
    CHECK(float_to_fp16_bits(0x1p-25f) == 0x0000);  // tie between 0 and 2^-24: even is 0
    CHECK(float_to_fp16_bits(0x1.8p-25f) == 0x0001);
    CHECK(float_to_fp16_bits(0x3p-25f) == 0x0002);      // tie between 1 and 2 units: even is 2
    CHECK(float_to_fp16_bits(0x1.FF8p-15f) == 0x03FF);  // largest subnormal
    CHECK(float_to_fp16_bits(0x1.FFAp-15f) == 0x03FF);
    CHECK(float_to_fp16_bits(0x1.FFCp-15f) == 0x0400);  // tie: up into the smallest normal
    CHECK(fp16_bits_to_float(0x0001) == 0x1p-24f);
    CHECK(fp16_bits_to_float(0x8001) == -0x1p-24f);
    CHECK(std::isinf(fp16_bits_to_float(0x7C00)));
    CHECK(std::isnan(fp16_bits_to_float(0x7C01)));
    CHECK(float_to_fp16_bits(std::bit_cast<float>(0x7F800001u)) == 0x7E00);  // quiet NaN
  }
}

TEST_CASE("load_as_float and store_from_float use the dtype's encoding") {
  const DType dtype = GENERATE(DType::bf16, DType::fp16, DType::fp32);
  std::vector<float> storage(4, 0.0f);
  store_from_float(storage.data(), dtype, 3, 1.00390625f);  // 1 + 2^-8: a tie in bf16
  const float expected = dtype == DType::bf16 ? 1.0f : 1.00390625f;
  CHECK(load_as_float(storage.data(), dtype, 3) == expected);
  CHECK(round_to_dtype(1.00390625f, dtype) == expected);
}
