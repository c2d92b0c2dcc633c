// poly_exp2 (kernels_templates/attnjit/poly_exp2.cuh), the softmax's exponential on the FMA pipe,
// run through its host branch: the same arithmetic as the kernels but for FMA contraction, which
// only moves the last bit. Checked against the C library's exp2 over every input the softmax can
// give it, and at the values its rule depends on: -inf and everything at or below -127 give
// exactly +0 (a masked score contributes nothing, a fully masked row keeps a zero sum), NaN stays
// NaN, 0 gives exactly 1 (a row's max element).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "attnjit/poly_exp2.cuh"

using attnjit::poly_exp2;

namespace {

double relative_error(float x) {
  const double exact = std::exp2(static_cast<double>(x));
  return std::fabs(static_cast<double>(poly_exp2(x)) - exact) / exact;
}

}  // namespace

TEST_CASE("poly_exp2 is within 1.02e-4 of 2^x where the softmax uses it", "[kernels][poly_exp2]") {
  double worst = 0.0;
  // A dense walk over [-126, 8], then random inputs between.
  for (int i = 0; i <= 134 * 4096; ++i) {
    const float x = -126.0f + static_cast<float>(i) / 4096.0f;
    worst = std::max(worst, relative_error(x));
  }
  std::mt19937 random(20261126);
  std::uniform_real_distribution<float> uniform(-126.0f, 8.0f);
  for (int i = 0; i < 200000; ++i) worst = std::max(worst, relative_error(uniform(random)));
  INFO("worst relative error " << worst);
  CHECK(worst < 1.02e-4);
  // Tighter than a bf16 probability's rounding (2^-9) and fp16's (2^-11) by far; and not exact:
  // the test would pass a libm exp2 too, so this bound keeps it measuring the cubic.
  CHECK(worst > 1e-5);
}

TEST_CASE("poly_exp2 keeps the softmax's rules: -inf gives +0, NaN stays NaN, 0 gives 1",
          "[kernels][poly_exp2]") {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (const float x : {-kInf, -1e30f, -1000.0f, -127.0f, -127.4f}) {
    INFO(x);
    CHECK(poly_exp2(x) == 0.0f);
    CHECK_FALSE(std::signbit(poly_exp2(x)));
  }
  // Just above -127: tiny, finite and not negative (2^n's bits are 0 or a small normal).
  for (const float x : {-126.9f, -126.5f, -126.1f}) {
    INFO(x);
    CHECK(poly_exp2(x) >= 0.0f);
    CHECK(poly_exp2(x) < 1.2e-38f);
  }
  CHECK(std::isnan(poly_exp2(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(poly_exp2(-std::numeric_limits<float>::quiet_NaN())));
  CHECK(poly_exp2(0.0f) == 1.0f);
  CHECK(poly_exp2(-0.0f) == 1.0f);
  // Whole powers of two are exact (f = 0): the integer part goes into the exponent bits.
  for (int n = -126; n <= 8; ++n) CHECK(poly_exp2(static_cast<float>(n)) == std::ldexp(1.0f, n));
  // Monotonic across the seams between whole numbers, where the cubic's ends meet.
  for (int n = -125; n <= 7; ++n) {
    const float seam = static_cast<float>(n) + 0.5f;
    CHECK(poly_exp2(std::nextafter(seam, -kInf)) <= poly_exp2(seam));
    CHECK(poly_exp2(seam) <= poly_exp2(std::nextafter(seam, kInf)));
  }
}
