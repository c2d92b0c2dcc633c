// The CUDA backend without a driver: every entry point fails cleanly, with the loader's message,
// and argument checks that need no GPU come first.
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "support/capture_error.hpp"
#include "driver_test_env.hpp"
#include "expr/expression.hpp"
#include "runtime/cuda_backend.hpp"

using namespace attnjit;
using attnjit::test::capture_error;

namespace {


struct Call {
  AttentionShape shape{1, 1, 1, 16, 16, 64};
  AttentionBuffers buffers;
  KernelBinary kernel;
  expr::Expression mask = expr::parse_expression(expr::ExprKind::mask, "q_idx >= kv_idx", {});
  alignas(16) char storage[64] = {};

  Call() {
    buffers.q = buffers.k = buffers.v = buffers.out = storage;
    buffers.q_strides = buffers.k_strides = buffers.v_strides = buffers.out_strides =
        layout_strides(Layout::bhld, 1, 16, 64);
    kernel.config = {64, 64, 4, 2, 32768};
  }
};

}  // namespace

TEST_CASE("current_device without a driver is Error(no_device)", "[driver]") {
  test_env::use_missing_driver();
  const Error e = capture_error([] { cuda::current_device(); });
  CHECK(e.status() == Status::no_device);
  CHECK_THAT(e.what(), Catch::StartsWith(std::string("CUDA driver not found: dlopen(") +
                                         test_env::kMissingDriver + ") failed: "));
  CHECK_THAT(e.what(), Catch::EndsWith("(use backend cpu or auto)"));
}

TEST_CASE("forward checks dtypes and shapes before it needs a driver", "[driver]") {
  test_env::use_missing_driver();
  Call call;

  SECTION("float32 is unsupported") {
    call.buffers.q_dtype = call.buffers.k_dtype = call.buffers.v_dtype = DType::fp32;
    const Error e = capture_error(
        [&] { cuda::forward(call.kernel, call.mask, {}, call.shape, call.buffers, false, {}, nullptr); });
    CHECK(e.status() == Status::unsupported);
    CHECK_THAT(e.what(),
               Catch::StartsWith("query, key and value must be bfloat16 or float16; got float32"));
  }
  SECTION("mismatched dtypes") {
    call.buffers.v_dtype = DType::fp16;
    const Error e = capture_error(
        [&] { cuda::forward(call.kernel, call.mask, {}, call.shape, call.buffers, false, {}, nullptr); });
    CHECK(e.status() == Status::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("same dtype"));
  }
  SECTION("bad shapes") {
    call.shape.num_heads_q = 3;
    call.shape.num_heads_kv = 2;
    const Error e = capture_error(
        [&] { cuda::forward(call.kernel, call.mask, {}, call.shape, call.buffers, false, {}, nullptr); });
    CHECK(e.status() == Status::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("multiple"));
  }
  SECTION("a grid too tall for the kernel") {
    call.shape.batch = 70000;
    const Error e = capture_error(
        [&] { cuda::forward(call.kernel, call.mask, {}, call.shape, call.buffers, false, {}, nullptr); });
    CHECK(e.status() == Status::unsupported);
    CHECK_THAT(e.what(), Catch::Contains("65535"));
  }
  SECTION("a persistent kernel's grid is one row of at most one block per SM: no height limit") {
    call.shape.batch = 70000;
    call.kernel.config.persistent = true;
    const Error e = capture_error(
        [&] { cuda::forward(call.kernel, call.mask, {}, call.shape, call.buffers, false, {}, nullptr); });
    CHECK(e.status() == Status::no_device);
  }
  SECTION("a valid call needs the driver") {
    const Error e = capture_error(
        [&] { cuda::forward(call.kernel, call.mask, {}, call.shape, call.buffers, false, {}, nullptr); });
    CHECK(e.status() == Status::no_device);
  }
}

TEST_CASE("release_resources without a driver does nothing", "[driver]") {
  test_env::use_missing_driver();
  CHECK_NOTHROW(cuda::release_resources());
}
