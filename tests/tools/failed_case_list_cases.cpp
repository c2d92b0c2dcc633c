// Hidden test cases for failed_case_list_test.sh: two that fail (one by an assertion, one by an
// exception) with the characters a Catch2 --input-file line must escape in their names, and one
// that passes. Hidden ([.]), so that only the script runs them.
#include <catch2/catch.hpp>
#include <stdexcept>

TEST_CASE("passes on purpose", "[.failed_case_list]") { CHECK(1 + 1 == 2); }

TEST_CASE("fails on purpose, with a comma, a \"quote\", a \\ backslash and [brackets]",
          "[.failed_case_list]") {
  CHECK(1 + 1 == 3);
}

TEST_CASE("throws on purpose", "[.failed_case_list]") {
  throw std::runtime_error("thrown on purpose");
}
