// attnjit_forward's checks of sizes and strides through the public C API (CPU backend), with
// hostile values: each must come back as ATTNJIT_ERROR_INVALID_ARGUMENT before any memory is
// touched, so a missing check shows as a crash or a sanitizer report, never as a pass.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attnjit/attnjit.hpp"
#include "cpu_variant.hpp"

namespace {

constexpr int kHeadDim = 16;

// A CPU runtime and a variant with no mask over fp32 inputs of head dim 16.
struct CpuVariant : attnjit_test::CpuVariant {
  CpuVariant() : attnjit_test::CpuVariant(kHeadDim) {}
};

// Buffers for [batch, heads, len, kHeadDim] fp32 tensors, q = k = v, and the args using them.
struct Problem {
  Problem(int batch, int heads, int len)
      : input(static_cast<std::size_t>(batch) * heads * len * kHeadDim, 0.5f),
        out(input.size(), 0.0f),
        lse(static_cast<std::size_t>(batch) * heads * len, 0.0f) {
    attnjit_forward_args_init(&args);
    args.q = args.k = args.v = input.data();
    args.out = out.data();
    args.lse = lse.data();
    args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_FP32;
    args.batch = batch;
    args.num_heads_q = args.num_heads_kv = heads;
    args.q_len = args.kv_len = len;
  }

  std::vector<float> input, out, lse;
  attnjit_forward_args args;
};

attnjit_status forward(const CpuVariant& v, const attnjit_forward_args& args) {
  return attnjit_forward(v.variant.get(), &args);
}

void set_strides(std::int64_t (&strides)[3], std::int64_t batch, std::int64_t head,
                 std::int64_t row) {
  strides[0] = batch;
  strides[1] = head;
  strides[2] = row;
}

}  // namespace

TEST_CASE("sizes whose products overflow 64 bits are refused") {
  CpuVariant v;
  Problem p(1, 1, 4);
  constexpr int kHuge = 1 << 30;
  SECTION("batch, heads and lengths of 2^30 with a layout") {
    for (const attnjit_layout layout : {ATTNJIT_LAYOUT_BHLD, ATTNJIT_LAYOUT_BLHD}) {
      p.args.layout = layout;
      p.args.batch = p.args.num_heads_q = p.args.num_heads_kv = kHuge;
      p.args.q_len = p.args.kv_len = kHuge;
      CHECK(forward(v, p.args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
      CHECK_THAT(attnjit_last_error(), Catch::Contains("too large to address"));
    }
  }
  SECTION("strides that fit, over sizes whose last offset does not") {
    p.args.batch = p.args.num_heads_q = p.args.num_heads_kv = kHuge;
    p.args.q_len = p.args.kv_len = kHuge;
    const std::int64_t row = kHeadDim, head = row * kHuge, batch = std::int64_t{1} << 62;
    for (auto* strides :
         {&p.args.q_strides, &p.args.k_strides, &p.args.v_strides, &p.args.out_strides}) {
      set_strides(*strides, batch, head, row);
    }
    CHECK(forward(v, p.args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("strides of INT64_MAX are refused before any memory is read") {
  CpuVariant v;
  Problem p(2, 2, 4);
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::int64_t contiguous[3] = {2 * 4 * kHeadDim, 4 * kHeadDim, kHeadDim};
  const auto reset = [&] {
    for (auto* strides :
         {&p.args.q_strides, &p.args.k_strides, &p.args.v_strides, &p.args.out_strides}) {
      set_strides(*strides, contiguous[0], contiguous[1], contiguous[2]);
    }
  };
  reset();
  REQUIRE(forward(v, p.args) == ATTNJIT_OK);
  for (auto* strides :
       {&p.args.q_strides, &p.args.k_strides, &p.args.v_strides, &p.args.out_strides}) {
    for (int which = 0; which < 3; ++which) {
      reset();
      (*strides)[which] = kMax;
      INFO("stride " << which);
      CHECK(forward(v, p.args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
      CHECK_THAT(attnjit_last_error(), Catch::Contains("address space"));
    }
  }
  SECTION("a stride that fits in elements but not in bytes") {
    reset();
    p.args.k_strides[0] = kMax / 2;  // 2 batches: offset kMax/2 elements, 4 bytes each
    CHECK(forward(v, p.args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("output strides that make elements share memory are refused") {
  CpuVariant v;
  Problem p(2, 3, 4);
  const std::int64_t row = kHeadDim, head = 4 * row, batch = 3 * head;
  struct Case {
    const char* name;
    std::int64_t batch, head, row;
  };
  const Case overlapping[] = {
      {"head stride 0", batch, 0, row},
      {"batch stride 0", 0, head, row},
      {"heads one row apart", batch, row, row},
      {"heads overlapping half their rows", batch, 2 * row, row},
      {"batches overlapping their last head", 2 * head, head, row},
  };
  for (const Case& c : overlapping) {
    INFO(c.name);
    set_strides(p.args.out_strides, c.batch, c.head, c.row);
    CHECK(forward(v, p.args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
    // A zero stride is refused as a partial stride first (see below), the others as overlap.
    CHECK_THAT(attnjit_last_error(),
               Catch::Contains("overlap") || Catch::Contains("sets only some strides"));
  }
  const Case disjoint[] = {
      {"bhld", batch, head, row},
      {"blhd", batch, row, 3 * row},
      {"padded rows", 3 * 4 * (row + 8), 4 * (row + 8), row + 8},
      {"heads outermost", row * 4, 2 * 4 * row, row},
  };
  for (const Case& c : disjoint) {
    INFO(c.name);
    std::vector<float> out(static_cast<std::size_t>(2 * 3 * 4 * (row + 8)), 0.0f);
    p.args.out = out.data();
    set_strides(p.args.out_strides, c.batch, c.head, c.row);
    CHECK(forward(v, p.args) == ATTNJIT_OK);
  }
}

TEST_CASE("inputs may overlap, and the stride of a single head or batch may be 0") {
  CpuVariant v;
  Problem p(1, 3, 4);
  // Every head's keys and values start one row after the previous head's.
  set_strides(p.args.k_strides, 3 * 4 * kHeadDim, kHeadDim, kHeadDim);
  set_strides(p.args.v_strides, 3 * 4 * kHeadDim, kHeadDim, kHeadDim);
  CHECK(forward(v, p.args) == ATTNJIT_OK);
  Problem single(1, 1, 4);
  set_strides(single.args.out_strides, 0, 0, kHeadDim);  // one batch, one head: never used
  set_strides(single.args.q_strides, 0, 0, kHeadDim);
  CHECK(forward(v, single.args) == ATTNJIT_OK);
}

TEST_CASE("partial strides are refused, not completed with zeros") {
  CpuVariant v;
  Problem p(2, 2, 4);
  struct Case {
    const char* name;
    std::int64_t batch, head, row;
  };
  const Case partial[] = {
      {"only the row stride", 0, 0, kHeadDim},
      {"no head stride", 2 * 4 * kHeadDim, 0, kHeadDim},
      {"no batch stride", 0, 4 * kHeadDim, kHeadDim},
      {"no row stride", 2 * 4 * kHeadDim, 4 * kHeadDim, 0},
  };
  for (std::int64_t(*strides)[3] :
       {&p.args.q_strides, &p.args.k_strides, &p.args.v_strides, &p.args.out_strides}) {
    for (const Case& c : partial) {
      INFO(c.name);
      set_strides(*strides, c.batch, c.head, c.row);
      CHECK(forward(v, p.args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
      CHECK_THAT(attnjit_last_error(), Catch::Contains("sets only some strides"));
    }
    set_strides(*strides, 0, 0, 0);  // back to the layout
  }
  CHECK(forward(v, p.args) == ATTNJIT_OK);
}

TEST_CASE("explicit strides equal to the layout's give the layout's result") {
  CpuVariant v;
  Problem from_layout(2, 2, 5);
  for (std::size_t i = 0; i < from_layout.input.size(); ++i) {
    from_layout.input[i] = std::sin(0.37f * static_cast<float>(i));
  }
  REQUIRE(forward(v, from_layout.args) == ATTNJIT_OK);
  Problem explicit_strides(2, 2, 5);
  std::copy(from_layout.input.begin(), from_layout.input.end(), explicit_strides.input.begin());
  for (auto* strides : {&explicit_strides.args.q_strides, &explicit_strides.args.k_strides,
                        &explicit_strides.args.v_strides, &explicit_strides.args.out_strides}) {
    set_strides(*strides, 2 * 5 * kHeadDim, 5 * kHeadDim, kHeadDim);
  }
  REQUIRE(forward(v, explicit_strides.args) == ATTNJIT_OK);
  CHECK(explicit_strides.out == from_layout.out);
  CHECK(explicit_strides.lse == from_layout.lse);
}

TEST_CASE("a NaN input comes back as NaN in the rows it reaches, with status OK") {
  CpuVariant v;
  Problem p(1, 2, 6);
  for (std::size_t i = 0; i < p.input.size(); ++i)
    p.input[i] = std::cos(0.11f * static_cast<float>(i));
  // q = k = v: element 3 of head 1, row 2 is in query row 2 and key row 2 of head 1, so it
  // reaches every row of head 1 (no mask) and nothing of head 0.
  p.input[(1 * 6 + 2) * kHeadDim + 3] = std::numeric_limits<float>::quiet_NaN();
  REQUIRE(forward(v, p.args) == ATTNJIT_OK);
  for (int h = 0; h < 2; ++h) {
    for (int row = 0; row < 6; ++row) {
      INFO("h=" << h << " row=" << row);
      const float lse = p.lse[static_cast<std::size_t>(h * 6 + row)];
      const float first = p.out[static_cast<std::size_t>((h * 6 + row) * kHeadDim)];
      CHECK(std::isnan(lse) == (h == 1));
      CHECK(std::isnan(first) == (h == 1));
    }
  }
}
