#include <catch2/catch.hpp>

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
