// Driver errors after a kernel with the sm90 mbarrier watchdog: a launch failure says that the
// watchdog's trap may be why and where its message is; other errors, and every error before such
// a kernel was queued, say nothing of it.
#include "driver/watchdog_hint.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "common/error.hpp"
#include "driver/cuda_driver.hpp"
#include "driver_test_env.hpp"
#include "support/capture_error.hpp"

using namespace attnjit;

TEST_CASE("the watchdog hint is for launch failures after a watchdog kernel only",
          "[driver][watchdog]") {
  for (const CUresult trap : {CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_ILLEGAL_INSTRUCTION}) {
    const std::string hint = driver::watchdog_trap_hint(trap, true);
    CHECK_THAT(hint, Catch::StartsWith(". An sm90 kernel with the mbarrier watchdog"));
    CHECK_THAT(hint, Catch::Contains("ends the kernel with this launch failure"));
    CHECK_THAT(hint, Catch::Contains("\"attnjit sm90 watchdog: ...\""));
    CHECK(driver::watchdog_trap_hint(trap, false).empty());
  }
  CHECK(driver::watchdog_trap_hint(CUDA_ERROR_OUT_OF_MEMORY, true).empty());
  CHECK(driver::watchdog_trap_hint(CUDA_ERROR_ILLEGAL_ADDRESS, true).empty());
}

TEST_CASE("once a watchdog kernel is queued, a failed call's launch failure carries the hint",
          "[driver][watchdog]") {
  test_env::use_missing_driver();
  driver::note_watchdog_kernel_queued();
  CHECK(driver::watchdog_kernel_queued());
  const Error trapped =
      test::capture_error([] { driver::check(CUDA_ERROR_LAUNCH_FAILED, "cuStreamSynchronize"); });
  CHECK(trapped.status() == Status::cuda);
  CHECK_THAT(trapped.what(), Catch::StartsWith("cuStreamSynchronize failed: CUresult 719: no description. An sm90 "
                                               "kernel with the mbarrier watchdog"));
  const Error oom = test::capture_error([] { driver::check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"); });
  CHECK_THAT(oom.what(), !Catch::Contains("watchdog"));
}
