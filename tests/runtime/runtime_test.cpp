#include <catch2/catch.hpp>

#include <bit>
#include <cstdlib>
#include <filesystem>

#include "common/error.hpp"
#include "support/capture_error.hpp"
#include "testkit/internal/compare.hpp"
#include "reference/naive.hpp"
#include "testkit/internal/random_inputs.hpp"
#include "runtime/runtime.hpp"
#include "runtime/variant.hpp"

using namespace attnjit;

namespace {

RuntimeOptions cpu_options() {
  RuntimeOptions options;
  options.backend = Backend::cpu;
  options.cache_dir = (std::filesystem::temp_directory_path() / "attnjit-runtime-test").string();
  return options;
}

VariantSpec sliding_window_spec() {
  VariantSpec spec;
  spec.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  spec.signature.params = {{"W", expr::ValueType::integer}};
  spec.dtype = DType::fp16;
  spec.head_dim = 32;
  return spec;
}

template <typename F>
Status status_of(F&& fn) {
  return test::capture_error(std::forward<F>(fn)).status();
}

}  // namespace

TEST_CASE("the cpu backend is used when asked for, whatever the machine") {
  Runtime runtime(cpu_options());
  CHECK(runtime.backend() == Backend::cpu);
  CHECK(runtime.device_arch().empty());
}

TEST_CASE("backend cuda fails with no_device where there is no driver; auto falls back") {
  // Note: point the loader at a library that cannot exist, so this holds on GPU machines too.
  setenv("ATTNJIT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  RuntimeOptions options = cpu_options();
  options.backend = Backend::cuda;
  try {
    Runtime runtime(options);
    FAIL("expected no_device");
  } catch (const Error& e) {
    CHECK(e.status() == Status::no_device);
    CHECK_THAT(e.what(), Catch::Contains("libcuda.so.1"));
  }
  options.backend = Backend::auto_select;
  Runtime fallback(options);
  CHECK(fallback.backend() == Backend::cpu);
  unsetenv("ATTNJIT_CUDA_DRIVER");
}

TEST_CASE("a variant runs sliding-window attention and per-call parameters take effect") {
  Runtime runtime(cpu_options());
  Variant variant(runtime, sliding_window_spec());
  AttentionShape shape{2, 4, 2, 45, 45, 32};
  reference::ProblemOptions options;
  options.dtype = DType::fp16;
  auto problem = reference::make_problem(shape, options);

  for (int window : {1, 7, 100}) {
    ForwardCall call;
    call.shape = shape;
    call.buffers = problem.buffers();
    call.scalars = {window};
    problem.out.fill_nan();
    variant.forward(call);
    std::vector<double> out, lse;
    reference::naive_attention(variant.mask(), variant.score(), variant.pack_args(call), shape,
                               call.buffers, out, lse);
    const auto stats = reference::compare_output(shape, call.buffers, out);
    INFO("window " << window << ": " << reference::describe(stats));
    CHECK(reference::within(stats, reference::output_tolerance(DType::fp16)));
  }
}

TEST_CASE("bad variants and calls are refused with a status and a reason") {
  Runtime runtime(cpu_options());
  SECTION("expression errors are parse errors") {
    VariantSpec spec = sliding_window_spec();
    spec.mask = "q_idx >= kv_idx && q_idx - kv_idx < V";
    CHECK(status_of([&] { Variant v(runtime, spec); }) == Status::parse);
  }
  SECTION("a bad declaration is an invalid argument") {
    VariantSpec spec = sliding_window_spec();
    spec.signature.params.push_back({"W", expr::ValueType::integer});
    CHECK(status_of([&] { Variant v(runtime, spec); }) == Status::invalid_argument);
  }
  SECTION("head dim out of range") {
    VariantSpec spec = sliding_window_spec();
    spec.head_dim = 0;
    CHECK(status_of([&] { Variant v(runtime, spec); }) == Status::invalid_argument);
  }
  Variant variant(runtime, sliding_window_spec());
  AttentionShape shape{1, 2, 2, 8, 8, 32};
  reference::ProblemOptions options;
  options.dtype = DType::fp16;
  auto problem = reference::make_problem(shape, options);
  ForwardCall call;
  call.shape = shape;
  call.buffers = problem.buffers();
  call.scalars = {4};
  REQUIRE(status_of([&] { variant.forward(call); }) == Status::ok);
  SECTION("missing parameter value") {
    call.scalars.clear();
    CHECK(status_of([&] { variant.forward(call); }) == Status::invalid_argument);
  }
  SECTION("an unexpected tensor") {
    call.tensors.push_back({problem.q.data(), {8, 1}});
    CHECK(status_of([&] { variant.forward(call); }) == Status::invalid_argument);
  }
  SECTION("inputs of another dtype than declared") {
    call.buffers.q_dtype = call.buffers.k_dtype = call.buffers.v_dtype = DType::bf16;
    CHECK_THROWS_WITH(variant.forward(call), Catch::Contains("declared for float16"));
  }
}

TEST_CASE("tensor values are checked against their declaration") {
  Runtime runtime(cpu_options());
  VariantSpec spec;
  spec.mask = "doc[q_idx] == doc[kv_idx]";
  spec.signature.tensors = {{"doc", expr::TensorElemType::int32, 1}};
  spec.dtype = DType::fp32;
  spec.head_dim = 16;
  Variant variant(runtime, spec);
  std::vector<int> ids(10, 0);
  ForwardCall call;
  SECTION("null data") {
    call.tensors = {{nullptr, {10, 1}}};
    CHECK_THROWS_WITH(variant.pack_args(call), Catch::Contains("'doc' has no data"));
  }
  SECTION("empty") {
    call.tensors = {{ids.data(), {0, 1}}};
    CHECK_THROWS_WITH(variant.pack_args(call), Catch::Contains("'doc' has dims"));
  }
  SECTION("too large for int32 indexing") {
    call.tensors = {{ids.data(), {std::int64_t{1} << 40, 1}}};
    CHECK_THROWS_WITH(variant.pack_args(call), Catch::Contains("'doc' has dims"));
  }
  SECTION("good") {
    call.tensors = {{ids.data(), {10, 1}}};
    const VariantArgs args = variant.pack_args(call);
    CHECK(args.tensors[0].dims[0] == 10);
    CHECK(args.tensors[0].rank == 1);
    CHECK(args.tensors[0].elem == kTensorInt32);
  }
}
