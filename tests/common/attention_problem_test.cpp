#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include "common/attention_problem.hpp"
#include "common/error.hpp"

using namespace attnjit;

TEST_CASE("layout strides are contiguous for both layouts") {
  const Strides bhld = layout_strides(Layout::bhld, 4, 10, 64);
  CHECK(bhld.batch == 4 * 10 * 64);
  CHECK(bhld.head == 10 * 64);
  CHECK(bhld.row == 64);
  const Strides blhd = layout_strides(Layout::blhd, 4, 10, 64);
  CHECK(blhd.batch == 10 * 4 * 64);
  CHECK(blhd.head == 64);
  CHECK(blhd.row == 4 * 64);
}

TEST_CASE("layout strides do not overflow int for long sequences") {
  // 64 heads x 2^30 rows overflows a 32-bit product; the strides are 64-bit all the way.
  const std::int64_t heads = 64, len = std::int64_t{1} << 30, d = 128;
  const Strides bhld = layout_strides(Layout::bhld, 64, 1 << 30, 128);
  CHECK(bhld.batch == heads * len * d);
  CHECK(bhld.head == len * d);
  const Strides blhd = layout_strides(Layout::blhd, 64, 1 << 30, 128);
  CHECK(blhd.batch == len * heads * d);
  CHECK(blhd.row == heads * d);
}

TEST_CASE("validate_problem rejects bad shapes and buffers with a reason") {
  AttentionShape shape{1, 4, 2, 8, 8, 64};
  float dummy = 0;
  AttentionBuffers buffers;
  buffers.q = buffers.k = buffers.v = &dummy;
  buffers.out = &dummy;
  buffers.q_strides = buffers.k_strides = buffers.v_strides = buffers.out_strides =
      layout_strides(Layout::bhld, 4, 8, 64);
  REQUIRE_NOTHROW(validate_problem(shape, buffers));

  SECTION("GQA ratio") {
    shape.num_heads_kv = 3;
    CHECK_THROWS_WITH(validate_problem(shape, buffers), Catch::Contains("multiple of num_heads_kv"));
  }
  SECTION("non-positive length") {
    shape.q_len = 0;
    CHECK_THROWS_WITH(validate_problem(shape, buffers), Catch::Contains("must be positive"));
  }
  SECTION("null buffer") {
    buffers.v = nullptr;
    CHECK_THROWS_WITH(validate_problem(shape, buffers), Catch::Contains("must not be null"));
  }
  SECTION("mixed dtypes") {
    buffers.k_dtype = DType::fp16;
    CHECK_THROWS_WITH(validate_problem(shape, buffers),
                      Catch::Contains("bfloat16, float16 and bfloat16"));
  }
  SECTION("overlapping rows") {
    buffers.out_strides.row = 32;
    CHECK_THROWS_WITH(validate_problem(shape, buffers), Catch::Contains("output strides"));
  }
  SECTION("status is invalid_argument") {
    shape.batch = -1;
    try {
      validate_problem(shape, buffers);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.status() == Status::invalid_argument);
    }
  }
}

TEST_CASE("layout strides that do not fit in 64 bits are refused") {
  const int huge = 1 << 30;
  for (const Layout layout : {Layout::bhld, Layout::blhd}) {
    CHECK_THROWS_WITH(layout_strides(layout, huge, huge, 1 << 10),
                      Catch::Contains("too large to address"));
  }
  // The largest that fits: 2^30 heads x 2^30 rows x 2^2 elements = 2^62.
  CHECK(layout_strides(Layout::bhld, huge, huge, 4).batch == std::int64_t{1} << 62);
}

namespace {

// A valid problem with [2, 4, 8, 64] / [2, 2, 8, 64] bhld tensors over one dummy buffer.
struct ValidProblem {
  AttentionShape shape{2, 4, 2, 8, 8, 64};
  float dummy = 0;
  AttentionBuffers buffers;
  ValidProblem() {
    buffers.q = buffers.k = buffers.v = &dummy;
    buffers.out = &dummy;
    buffers.q_strides = buffers.out_strides = layout_strides(Layout::bhld, 4, 8, 64);
    buffers.k_strides = buffers.v_strides = layout_strides(Layout::bhld, 2, 8, 64);
  }
};

}  // namespace

TEST_CASE("validate_problem refuses views whose offsets overflow 64 bits") {
  ValidProblem p;
  REQUIRE_NOTHROW(validate_problem(p.shape, p.buffers));
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  SECTION("INT64_MAX batch stride of the key") {
    p.buffers.k_strides.batch = kMax;
    CHECK_THROWS_WITH(validate_problem(p.shape, p.buffers),
                      Catch::Contains("key [2, 2, 8, 64]") && Catch::Contains("address space"));
  }
  SECTION("INT64_MAX row stride of the output") {
    p.buffers.out_strides.row = kMax;
    CHECK_THROWS_WITH(validate_problem(p.shape, p.buffers), Catch::Contains("output [2, 4, 8, 64]"));
  }
  SECTION("offsets that fit in elements but not in bytes") {
    p.buffers.v_strides.batch = kMax / 2 + 1;  // the last offset * 2 bytes wraps
    CHECK_THROWS_WITH(validate_problem(p.shape, p.buffers), Catch::Contains("value"));
  }
  SECTION("a sum of in-range products that overflows") {
    p.buffers.q_strides.batch = kMax / 2;
    p.buffers.q_strides.head = kMax / 4;
    CHECK_THROWS_WITH(validate_problem(p.shape, p.buffers), Catch::Contains("query"));
  }
  SECTION("sizes of 2^30 with strides that fit") {
    const int huge = 1 << 30;
    p.shape = {huge, huge, huge, huge, huge, 64};
    p.buffers.q_strides = p.buffers.k_strides = p.buffers.v_strides = p.buffers.out_strides =
        Strides{std::int64_t{1} << 40, std::int64_t{1} << 20, 64};
    CHECK_THROWS_WITH(validate_problem(p.shape, p.buffers), Catch::Contains("address space"));
  }
  SECTION("a buffer near the top of the address space") {
    // Not dereferenced: only its address takes part in the check.
    p.buffers.out = reinterpret_cast<void*>(UINTPTR_MAX - 100);
    CHECK_THROWS_WITH(validate_problem(p.shape, p.buffers), Catch::Contains("output"));
  }
}

TEST_CASE("validate_problem refuses output layouts whose elements share memory") {
  ValidProblem p;
  const Strides contiguous = p.buffers.out_strides;  // {2048, 512, 64}
  struct Case {
    const char* name;
    Strides strides;
  };
  const Case overlapping[] = {
      {"head stride 0", {contiguous.batch, 0, 64}},
      {"batch stride 0", {0, contiguous.head, 64}},
      {"heads one row apart", {contiguous.batch, 64, 64}},
      {"batches overlapping their last head", {3 * 512, 512, 64}},
      {"head stride inside a row", {contiguous.batch, 32, 8 * 64}},
  };
  for (const Case& c : overlapping) {
    INFO(c.name);
    p.buffers.out_strides = c.strides;
    CHECK_THROWS_WITH(validate_problem(p.shape, p.buffers),
                      Catch::Contains("output strides") && Catch::Contains("overlap"));
  }
  const Case disjoint[] = {
      {"bhld", contiguous},
      {"blhd", layout_strides(Layout::blhd, 4, 8, 64)},
      {"padded rows", {4 * 8 * 80, 8 * 80, 80}},
      {"heads outermost", {8 * 64, 2 * 8 * 64, 64}},
      {"gaps between batches", {10000, 512, 64}},
  };
  for (const Case& c : disjoint) {
    INFO(c.name);
    p.buffers.out_strides = c.strides;
    CHECK_NOTHROW(validate_problem(p.shape, p.buffers));
  }
  SECTION("inputs may share memory, and a dimension of one index may have any stride") {
    p.buffers.k_strides.head = 0;
    p.buffers.v_strides.batch = 0;
    CHECK_NOTHROW(validate_problem(p.shape, p.buffers));
    p.shape.batch = 1;
    p.buffers.out_strides.batch = 0;
    CHECK_NOTHROW(validate_problem(p.shape, p.buffers));
  }
}
