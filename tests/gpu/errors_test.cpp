// The CUDA backend refuses bad calls before any launch, each with its own message.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "common/error.hpp"
#include "support/capture_error.hpp"
#include "expr/expression.hpp"
#include "gpu_harness.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_memory.hpp"

using namespace attnjit;
using attnjit::test::capture_error;
using namespace attnjit::gpu_test;
using namespace attnjit::kernel_test;

namespace {

struct Fixture {
  AttentionShape shape;
  VariantSpec spec;
  KernelBinary kernel;
  expr::Expression mask;
  cuda::DeviceBuffer q, k, v, out;
  AttentionBuffers buffers;

  Fixture()
      : shape{1, 2, 2, 64, 64, 64},
        spec(make_spec(causal_case())),
        kernel(compile_variant(spec, device_arch(), test_cache())),
        mask(expr::parse_expression(expr::ExprKind::mask, spec.mask, spec.signature)),
        q(bytes()),
        k(bytes()),
        v(bytes()),
        out(bytes()) {
    const Strides strides = layout_strides(Layout::bhld, 2, 64, 64);
    buffers.q = q.get();
    buffers.k = k.get();
    buffers.v = v.get();
    buffers.out = out.get();
    buffers.q_strides = buffers.k_strides = buffers.v_strides = buffers.out_strides = strides;
  }

  static KernelCase causal_case() {
    KernelCase c;
    c.mask = "q_idx >= kv_idx";
    c.head_dim = 64;
    return c;
  }
  static std::size_t bytes() { return 2 * 64 * 64 * 2 + 64; }

  void run(const AttentionBuffers& b, const AttentionShape& s) {
    cuda::forward(kernel, mask, VariantArgs{}, s, b, false, {}, nullptr);
  }
};


}  // namespace

TEST_CASE("the cuda backend rejects bad calls before launching", "[gpu][sanitize]") {
  Fixture f;

  SECTION("a host pointer as the query") {
    std::vector<std::uint16_t> host(2 * 64 * 64);
    AttentionBuffers b = f.buffers;
    b.q = host.data();
    const Error e = capture_error([&] { f.run(b, f.shape); });
    CHECK(e.status() == Status::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("query pointer") && Catch::Contains("not device memory"));
  }
  SECTION("a misaligned pointer") {
    AttentionBuffers b = f.buffers;
    b.k = static_cast<const char*>(b.k) + 2;
    const Error e = capture_error([&] { f.run(b, f.shape); });
    CHECK(e.status() == Status::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("key pointer") && Catch::Contains("aligned to 16"));
  }
  SECTION("a misaligned row stride") {
    AttentionBuffers b = f.buffers;
    b.v_strides.row = 68;
    b.v_strides.head = 68 * 64;
    const Error e = capture_error([&] { f.run(b, f.shape); });
    CHECK(e.status() == Status::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("value row stride"));
  }
  SECTION("float32 inputs") {
    AttentionBuffers b = f.buffers;
    b.q_dtype = b.k_dtype = b.v_dtype = DType::fp32;
    const Error e = capture_error([&] { f.run(b, f.shape); });
    CHECK(e.status() == Status::unsupported);
    CHECK_THAT(e.what(),
               Catch::StartsWith("query, key and value must be bfloat16 or float16; got float32"));
  }
  SECTION("mixed dtypes") {
    AttentionBuffers b = f.buffers;
    b.k_dtype = DType::fp16;
    const Error e = capture_error([&] { f.run(b, f.shape); });
    CHECK(e.status() == Status::invalid_argument);
  }
  SECTION("a buffer too small for the shape") {
    // Note: 16 MiB per view, past any rounding of the 16 KiB allocation's range (2 MiB pages).
    AttentionShape s = f.shape;
    s.q_len = s.kv_len = 65536;
    AttentionBuffers b = f.buffers;
    b.q_strides = b.k_strides = b.v_strides = b.out_strides =
        layout_strides(Layout::bhld, 2, 65536, 64);
    const Error e = capture_error([&] { f.run(b, s); });
    CHECK(e.status() == Status::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("too small"));
  }
  SECTION("a pointer CUDA has never seen, inside the alignment") {
    alignas(16) static std::uint16_t stack_like[2 * 64 * 64];
    AttentionBuffers b = f.buffers;
    b.out = stack_like;
    const Error e = capture_error([&] { f.run(b, f.shape); });
    CHECK(e.status() == Status::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("output pointer") && Catch::Contains("not device memory"));
  }
  SECTION("a freed device pointer") {
    const void* freed = nullptr;
    {
      cuda::DeviceBuffer gone(Fixture::bytes());
      freed = gone.get();
    }
    AttentionBuffers b = f.buffers;
    b.v = freed;
    const Error e = capture_error([&] { f.run(b, f.shape); });
    CHECK(e.status() == Status::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("value pointer"));
  }
  SECTION("a declared tensor that is not passed") {
    KernelCase c;
    c.mask = "doc[q_idx] == doc[kv_idx]";
    c.tensors = {TensorInput{"doc:int32[1]", {}, {}, {64, 1}}};
    const VariantSpec spec = make_spec(c);
    const KernelBinary kernel = compile_variant(spec, device_arch(), test_cache());
    const expr::Expression mask =
        expr::parse_expression(expr::ExprKind::mask, spec.mask, spec.signature);
    const Error e =
        capture_error([&] { cuda::forward(kernel, mask, VariantArgs{}, f.shape, f.buffers, false, {}, nullptr); });
    CHECK(e.status() == Status::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("tensor 'doc'"));
  }
}
