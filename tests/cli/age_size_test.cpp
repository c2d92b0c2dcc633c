#include "age_size.hpp"

#include <catch2/catch.hpp>

#include "attnjit/attnjit.hpp"

using namespace attnjit::cli;

TEST_CASE("sizes parse from 4096, 100K, 512M, 2G, 1T, with an optional B or iB", "[cli]") {
  CHECK(parse_size("4096") == 4096);
  CHECK(parse_size("100K") == 100 * 1024);
  CHECK(parse_size("512M") == 512ull << 20);
  CHECK(parse_size("2G") == 2ull << 30);
  CHECK(parse_size("2GiB") == 2ull << 30);
  CHECK(parse_size("2GB") == 2ull << 30);
  CHECK(parse_size("1T") == 1ull << 40);
  CHECK(parse_size("0") == 0);
  for (const char* bad : {"", "M", "-1M", "2X", "1.5G", "99999999999999999999T", "2 G"}) {
    CHECK_THROWS_AS(parse_size(bad), attnjit::c::Error);
  }
}

TEST_CASE("ages parse from 45s, 30m, 12h, 7d, 2w", "[cli]") {
  CHECK(parse_age("45s") == std::chrono::seconds(45));
  CHECK(parse_age("30m") == std::chrono::minutes(30));
  CHECK(parse_age("12h") == std::chrono::hours(12));
  CHECK(parse_age("7d") == std::chrono::hours(24 * 7));
  CHECK(parse_age("2w") == std::chrono::hours(24 * 14));
  for (const char* bad : {"", "7", "d", "7x", "-1d", "7dd", "9223372036854775807w"}) {
    CHECK_THROWS_AS(parse_age(bad), attnjit::c::Error);
  }
  CHECK(format_age(std::chrono::hours(49)) == "2d");
  CHECK(format_age(std::chrono::seconds(59)) == "59s");
}
