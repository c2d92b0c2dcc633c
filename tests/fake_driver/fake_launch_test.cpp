// The fake libcuda's launches: emulated (a kernel whose source the fake cannot find fails), or
// with ATTNJIT_FAKE_CUDA_LAUNCHES=skip only checked and counted, which is how gpu-bundle.sh
// compiles every kernel test_gpu needs without running one. ctest runs this file's case twice,
// as is and with the variable set (ATTNJIT_EXPECT_SKIPPED_LAUNCHES=1 says which), since the fake
// reads it once per process.
#include <cuda.h>
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "fake_entry_points.hpp"

namespace {

using attnjit::fake_driver::resolve;

// attnjit_fwd of a module whose source the fake cannot find (a bare ELF header), unloaded when
// it goes out of scope.
class UnknownKernel {
 public:
  UnknownKernel() {
    const auto load = resolve<CUresult (*)(CUmodule*, const void*)>("cuModuleLoadData");
    const auto get_function =
        resolve<CUresult (*)(CUfunction*, CUmodule, const char*)>("cuModuleGetFunction");
    const char image[64] =
        "\x7f"
        "ELF";
    REQUIRE(load(&module_, image) == CUDA_SUCCESS);
    REQUIRE(get_function(&function_, module_, "attnjit_fwd") == CUDA_SUCCESS);
  }
  ~UnknownKernel() {
    if (module_ != nullptr) resolve<CUresult (*)(CUmodule)>("cuModuleUnload")(module_);
  }
  UnknownKernel(const UnknownKernel&) = delete;
  UnknownKernel& operator=(const UnknownKernel&) = delete;

  CUfunction function() const { return function_; }

 private:
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
};

CUresult launch_unknown_kernel() {
  const auto launch_kernel =
      resolve<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**)>("cuLaunchKernel");
  int params = 0;
  void* kernel_params[] = {&params};
  const UnknownKernel kernel;
  return launch_kernel(kernel.function(), 1, 1, 1, 128, 1, 1, 0, nullptr, kernel_params, nullptr);
}

// The same through cuLaunchKernelEx with `attribute`.
CUresult launch_unknown_kernel_ex(const CUlaunchAttribute& attribute) {
  const auto launch_kernel_ex =
      resolve<CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**)>("cuLaunchKernelEx");
  CUlaunchAttribute attributes[] = {attribute};
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 128;
  config.blockDimY = config.blockDimZ = 1;
  config.attrs = attributes;
  config.numAttrs = 1;
  int params = 0;
  void* kernel_params[] = {&params};
  const UnknownKernel kernel;
  return launch_kernel_ex(&config, kernel.function(), kernel_params, nullptr);
}

}  // namespace

TEST_CASE("fake launches run, or with ATTNJIT_FAKE_CUDA_LAUNCHES=skip are counted only",
          "[fake_driver][launches]") {
  const char* expect = std::getenv("ATTNJIT_EXPECT_SKIPPED_LAUNCHES");
  const bool skipped = expect != nullptr && std::string(expect) == "1";
  const auto launch_count = reinterpret_cast<int (*)()>(
      dlsym(attnjit::fake_driver::fake_library(), "attnjit_fake_cuda_launch_count"));
  REQUIRE(launch_count != nullptr);
  const int before = launch_count();
  const CUresult result = launch_unknown_kernel();
  CHECK(launch_count() == before + 1);
  CHECK(result == (skipped ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED));
}

// cuLaunchKernelEx knows the one attribute attnjit sets, programmatic stream serialisation, and
// refuses it below compute capability 9.0 (the fake is sm_90 unless ATTNJIT_FAKE_CUDA_SM says
// otherwise); it counts the launches it made programmatic.
TEST_CASE(
    "fake cuLaunchKernelEx counts programmatic launches on sm_90 and refuses them below "
    "and any other attribute",
    "[fake_driver][launches]") {
  const char* expect = std::getenv("ATTNJIT_EXPECT_SKIPPED_LAUNCHES");
  const bool skipped = expect != nullptr && std::string(expect) == "1";
  const auto count = [](const char* name) {
    const auto function =
        reinterpret_cast<int (*)()>(dlsym(attnjit::fake_driver::fake_library(), name));
    REQUIRE(function != nullptr);
    return function();
  };
  const int launches = count("attnjit_fake_cuda_launch_count");
  const int programmatic = count("attnjit_fake_cuda_programmatic_launch_count");
  CUlaunchAttribute overlap{};
  overlap.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  overlap.value.programmaticStreamSerializationAllowed = 1;
  CHECK(launch_unknown_kernel_ex(overlap) == (skipped ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED));
  CHECK(count("attnjit_fake_cuda_launch_count") == launches + 1);
  CHECK(count("attnjit_fake_cuda_programmatic_launch_count") == programmatic + 1);

  CUlaunchAttribute cooperative{};
  cooperative.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  cooperative.value.cooperative = 1;
  CHECK(launch_unknown_kernel_ex(cooperative) == CUDA_ERROR_INVALID_VALUE);
  CHECK(count("attnjit_fake_cuda_launch_count") == launches + 1);

  // Note: the fake reads ATTNJIT_FAKE_CUDA_SM at each query; nothing else here depends on it.
  REQUIRE(std::getenv("ATTNJIT_FAKE_CUDA_SM") == nullptr);
  ::setenv("ATTNJIT_FAKE_CUDA_SM", "80", 1);
  const CUresult on_sm80 = launch_unknown_kernel_ex(overlap);
  ::unsetenv("ATTNJIT_FAKE_CUDA_SM");
  CHECK(on_sm80 == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(count("attnjit_fake_cuda_launch_count") == launches + 1);
}

// Stream capture as the fake models it (test_gpu's graph case relies on it): the legacy stream
// cannot capture; work on a capturing stream is recorded, not done, and runs at each replay; a
// synchronisation during the capture fails and invalidates it.
TEST_CASE("fake stream capture records, replays and refuses what CUDA forbids", "[fake_driver]") {
  using attnjit::fake_driver::resolve;
  const auto begin = resolve<CUresult (*)(CUstream, CUstreamCaptureMode)>("cuStreamBeginCapture");
  const auto end = resolve<CUresult (*)(CUstream, CUgraph*)>("cuStreamEndCapture");
  const auto instantiate = resolve<CUresult (*)(CUgraphExec*, CUgraph, unsigned long long)>(
      "cuGraphInstantiateWithFlags");
  const auto launch = resolve<CUresult (*)(CUgraphExec, CUstream)>("cuGraphLaunch");
  const auto destroy_exec = resolve<CUresult (*)(CUgraphExec)>("cuGraphExecDestroy");
  const auto destroy = resolve<CUresult (*)(CUgraph)>("cuGraphDestroy");
  const auto create_stream = resolve<CUresult (*)(CUstream*, unsigned)>("cuStreamCreate");
  const auto destroy_stream = resolve<CUresult (*)(CUstream)>("cuStreamDestroy");
  const auto synchronize = resolve<CUresult (*)(CUstream)>("cuStreamSynchronize");
  const auto is_capturing =
      resolve<CUresult (*)(CUstream, CUstreamCaptureStatus*)>("cuStreamIsCapturing");
  const auto alloc = resolve<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc");
  const auto release = resolve<CUresult (*)(CUdeviceptr)>("cuMemFree");
  const auto memset_async =
      resolve<CUresult (*)(CUdeviceptr, unsigned, size_t, CUstream)>("cuMemsetD32Async");

  CHECK(begin(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUstream stream = nullptr;
  REQUIRE(create_stream(&stream, 0) == CUDA_SUCCESS);
  CUdeviceptr word = 0;
  REQUIRE(alloc(&word, 4) == CUDA_SUCCESS);
  auto* value = reinterpret_cast<unsigned*>(word);
  *value = 1;

  REQUIRE(begin(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CHECK(is_capturing(stream, &status) == CUDA_SUCCESS);
  CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK(memset_async(word, 7, 1, stream) == CUDA_SUCCESS);
  CHECK(*value == 1);  // recorded, not done
  CUgraph graph = nullptr;
  REQUIRE(end(stream, &graph) == CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  REQUIRE(instantiate(&exec, graph, 0) == CUDA_SUCCESS);
  CHECK(launch(exec, stream) == CUDA_SUCCESS);
  CHECK(*value == 7);
  *value = 1;
  CHECK(launch(exec, stream) == CUDA_SUCCESS);
  CHECK(*value == 7);
  CHECK(destroy_exec(exec) == CUDA_SUCCESS);
  CHECK(destroy(graph) == CUDA_SUCCESS);

  REQUIRE(begin(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  CHECK(synchronize(stream) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK(is_capturing(stream, &status) == CUDA_SUCCESS);
  CHECK(status == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CHECK(end(stream, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CHECK(is_capturing(stream, &status) == CUDA_SUCCESS);
  CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);

  CHECK(release(word) == CUDA_SUCCESS);
  CHECK(destroy_stream(stream) == CUDA_SUCCESS);
}
