// What a failed driver call says once a kernel with the sm90 mbarrier watchdog was loaded: the
// wait its record names, or that no wait timed out; nothing for errors a fault is not reported
// with, nor before any watchdog kernel. (Attaching the record to a module runs on the fake
// device: tests/dispatch.)
#include "driver/watchdog_record.hpp"

#include <catch2/catch.hpp>
#include <cstring>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "driver/cuda_driver.hpp"
#include "driver_test_env.hpp"
#include "support/capture_error.hpp"

using namespace attnjit;

namespace {

Sm90WatchdogRecord expired_wait(const char* what) {
  Sm90WatchdogRecord record{};
  record.claimed = 1;
  record.barrier = 0x410;
  record.parity = 0;
  record.block[0] = 3;
  record.block[1] = 17;
  record.thread = 128;
  record.elapsed_ms = 5002;
  std::strncpy(record.what, what, sizeof(record.what));
  return record;
}

}  // namespace

TEST_CASE("an expired wait's record is named in the errors a fault is reported with",
          "[driver][watchdog]") {
  for (const CUresult fault :
       {CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_ILLEGAL_INSTRUCTION}) {
    CHECK(driver::watchdog_hint(fault, expired_wait("K full")) ==
          ". The sm90 mbarrier watchdog (ATTNJIT_TUNE sm90_watchdog_ms) ended the kernel: the "
          "wait \"K full\" (mbarrier at shared address 0x410, parity 0) of block (3, 17, 0) "
          "thread 128 was still incomplete after 5002 ms");
  }
  CHECK(driver::watchdog_hint(CUDA_ERROR_OUT_OF_MEMORY, expired_wait("K full")).empty());
  CHECK(driver::watchdog_hint(CUDA_ERROR_INVALID_VALUE, expired_wait("K full")).empty());
}

TEST_CASE("a record no wait claimed says the watchdog did not cause the fault",
          "[driver][watchdog]") {
  const Sm90WatchdogRecord unclaimed{};
  CHECK_THAT(driver::watchdog_hint(CUDA_ERROR_ILLEGAL_ADDRESS, unclaimed),
             Catch::StartsWith(". An sm90 kernel with the mbarrier watchdog") &&
                 Catch::EndsWith("none of its waits timed out: the watchdog did not cause this "
                                 "failure"));
  CHECK(driver::watchdog_hint(CUDA_ERROR_ILLEGAL_ADDRESS, std::nullopt).empty());
}

TEST_CASE("a label that fills the record's field is read without its NUL", "[driver][watchdog]") {
  Sm90WatchdogRecord record = expired_wait("");
  std::memset(record.what, 'x', sizeof(record.what));
  CHECK_THAT(driver::watchdog_hint(CUDA_ERROR_LAUNCH_FAILED, record),
             Catch::Contains("the wait \"" + std::string(sizeof(record.what), 'x') + "\" ("));
}

TEST_CASE("without a watchdog kernel, driver errors say nothing of it", "[driver][watchdog]") {
  test_env::use_missing_driver();
  CHECK_FALSE(driver::read_watchdog_record().has_value());
  const Error fault =
      test::capture_error([] { driver::check(CUDA_ERROR_ILLEGAL_ADDRESS, "cuStreamSynchronize"); });
  CHECK(fault.status() == Status::cuda);
  CHECK_THAT(fault.what(), !Catch::Contains("watchdog"));
}
