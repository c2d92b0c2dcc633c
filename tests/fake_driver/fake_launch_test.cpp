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

// Launches attnjit_fwd of a module whose source the fake cannot find (a bare ELF header).
CUresult launch_unknown_kernel() {
  const auto load = resolve<CUresult (*)(CUmodule*, const void*)>("cuModuleLoadData");
  const auto get_function =
      resolve<CUresult (*)(CUfunction*, CUmodule, const char*)>("cuModuleGetFunction");
  const auto launch_kernel =
      resolve<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**)>("cuLaunchKernel");
  const char image[64] =
      "\x7f"
      "ELF";
  CUmodule module = nullptr;
  REQUIRE(load(&module, image) == CUDA_SUCCESS);
  CUfunction function = nullptr;
  REQUIRE(get_function(&function, module, "attnjit_fwd") == CUDA_SUCCESS);
  int params = 0;
  void* kernel_params[] = {&params};
  return launch_kernel(function, 1, 1, 1, 128, 1, 1, 0, nullptr, kernel_params, nullptr);
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
