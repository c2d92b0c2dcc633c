// The driver loader on machines with or without a driver: dlopen failures, a library path from
// the environment, a driver whose cuInit fails, and symbols the driver lacks.
#include <dlfcn.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>

#include "common/error.hpp"
#include "support/capture_error.hpp"
#include "driver/cuda_driver.hpp"
#include "driver_test_env.hpp"

using namespace attnjit;
using attnjit::test::capture_error;

namespace {


}  // namespace

TEST_CASE("a missing driver library is Error(no_device) naming the path and the way out",
          "[driver]") {
  const Error e = capture_error([] { driver::load_driver("/nonexistent/libcuda.so.1"); });
  CHECK(e.status() == Status::no_device);
  CHECK_THAT(e.what(), Catch::StartsWith("CUDA driver not found: dlopen(/nonexistent/libcuda.so.1) "
                                         "failed: /nonexistent/libcuda.so.1: cannot open"));
  CHECK_THAT(e.what(), Catch::EndsWith("; attnjit needs an NVIDIA driver for the cuda backend "
                                       "(use backend cpu or auto)"));
}

TEST_CASE("the default library is libcuda.so.1 unless ATTNJIT_CUDA_DRIVER names another",
          "[driver]") {
  unsetenv("ATTNJIT_CUDA_DRIVER");
  CHECK(driver::driver_library_path() == "libcuda.so.1");
  setenv("ATTNJIT_CUDA_DRIVER", "", 1);
  CHECK(driver::driver_library_path() == "libcuda.so.1");
  setenv("ATTNJIT_CUDA_DRIVER", "/opt/other/libcuda.so", 1);
  CHECK(driver::driver_library_path() == "/opt/other/libcuda.so");
  test_env::use_missing_driver();
}

TEST_CASE("without libcuda.so.1 the message is the documented one", "[driver]") {
  void* probe = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (probe != nullptr) {
    dlclose(probe);
    WARN("libcuda.so.1 is present here; only the loading path is checked");
    CHECK_NOTHROW(driver::load_driver("libcuda.so.1"));
    return;
  }
  const Error e = capture_error([] { driver::load_driver("libcuda.so.1"); });
  CHECK(e.status() == Status::no_device);
  CHECK_THAT(e.what(), Catch::StartsWith("CUDA driver not found: dlopen(libcuda.so.1) failed: "));
  CHECK_THAT(e.what(), Catch::Contains("use backend cpu or auto"));
}

TEST_CASE("the process driver remembers its failure and reports it again", "[driver]") {
  test_env::use_missing_driver();
  CHECK_FALSE(driver::driver_available());
  const Error first = capture_error([] { driver::api(); });
  const Error second = capture_error([] { driver::api(); });
  CHECK(first.status() == Status::no_device);
  CHECK(std::string(first.what()) == second.what());
  CHECK_THAT(first.what(), Catch::Contains(test_env::kMissingDriver));
}

TEST_CASE("a driver whose cuInit fails is Error(no_device) with the driver's error name",
          "[driver]") {
  setenv("ATTNJIT_FAKE_CUINIT", "100", 1);
  const Error e = capture_error([] { driver::load_driver(ATTNJIT_FAKE_CUDA_PATH); });
  unsetenv("ATTNJIT_FAKE_CUINIT");
  CHECK(e.status() == Status::no_device);
  CHECK_THAT(e.what(), Catch::StartsWith("cuInit failed: CUDA_ERROR_NO_DEVICE: no CUDA-capable "
                                         "device is detected"));
}

TEST_CASE("symbols the driver lacks stay null and calling them is an error", "[driver]") {
  const auto table = driver::load_driver(ATTNJIT_FAKE_CUDA_PATH);
  CHECK(table->cuInit != nullptr);
  CHECK(table->driver_version == 13000);
  CHECK(table->cuMemAlloc == nullptr);
  CHECK(table->cuLaunchKernel == nullptr);
  CUdeviceptr pointer = 0;
  const Error e = capture_error(
      [&] { driver::call_checked(table->cuMemAlloc, "cuMemAlloc", &pointer, std::size_t{16}); });
  CHECK(e.status() == Status::cuda);
  CHECK_THAT(e.what(), Catch::Contains("does not export cuMemAlloc"));
}

TEST_CASE("entry points are asked for by base name at their pinned ABI version", "[driver]") {
  const auto table = driver::load_driver(ATTNJIT_FAKE_CUDA_PATH);
  CHECK(table->used_get_proc_address);
  // The fake's cuGetProcAddress knows cuCtxSynchronize only at the (void) ABI, before 13000.
  CHECK(table->cuCtxSynchronize != nullptr);
  CHECK(table->cuCtxSynchronize() == CUDA_SUCCESS);

  void* fake = dlopen(ATTNJIT_FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(fake != nullptr);
  using Requests = const char* (*)();
  const auto requests = reinterpret_cast<Requests>(dlsym(fake, "fake_proc_requests"));
  REQUIRE(requests != nullptr);
  const std::string asked = requests();
  dlclose(fake);
  const std::string legacy = std::to_string(CU_GET_PROC_ADDRESS_LEGACY_STREAM);
  // Note: CUDA 13.0's newest cuCtxSynchronize takes a CUcontext; the table must not ask for it.
  CHECK_THAT(asked, Catch::Contains("cuCtxSynchronize@2000/" + legacy + ";"));
  CHECK_THAT(asked, Catch::Contains("cuCtxGetDevice@2000/" + legacy + ";"));
  CHECK_THAT(asked, Catch::Contains("cuMemAlloc@3020/" + legacy + ";"));
  CHECK_THAT(asked, Catch::Contains("cuLaunchKernel@4000/" + legacy + ";"));
  CHECK_THAT(asked, Catch::Contains("cuDevicePrimaryCtxRelease@11000/" + legacy + ";"));
  CHECK_THAT(asked, !Catch::Contains("_v2@"));
}

TEST_CASE("CUDA results map to statuses and messages", "[driver]") {
  test_env::use_missing_driver();
  CHECK(driver::status_for_result(CUDA_ERROR_OUT_OF_MEMORY) == Status::out_of_memory);
  CHECK(driver::status_for_result(CUDA_ERROR_NO_DEVICE) == Status::no_device);
  CHECK(driver::status_for_result(CUDA_ERROR_LAUNCH_FAILED) == Status::cuda);
  CHECK(driver::status_for_result(CUDA_ERROR_INVALID_VALUE) == Status::cuda);
  const Error oom = capture_error([] { driver::check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"); });
  CHECK(oom.status() == Status::out_of_memory);
  // Without a driver there is no error text to ask for: the number stands in.
  CHECK_THAT(oom.what(), Catch::StartsWith("cuMemAlloc failed: CUresult 2"));
  CHECK_NOTHROW(driver::check(CUDA_SUCCESS, "cuInit"));
}
