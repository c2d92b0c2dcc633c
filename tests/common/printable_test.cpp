#include "common/printable.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace attnjit;

TEST_CASE("printable escapes every byte outside printable ASCII") {
  CHECK(printable("causal_window-2 (x: 1.5)") == "causal_window-2 (x: 1.5)");
  CHECK(printable("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m");
  CHECK(printable("a\rb\nc\td") == "a\\x0db\\x0ac\\x09d");
  CHECK(printable(std::string("nul\0byte", 8)) == "nul\\x00byte");
  CHECK(printable("caf\xc3\xa9 \x7f \x9b") == "caf\\xc3\\xa9 \\x7f \\x9b");
  CHECK(printable("") == "");
}

TEST_CASE("printable_lines keeps line breaks and escapes the rest") {
  CHECK(printable_lines("line 1\nline 2\n") == "line 1\nline 2\n");
  CHECK(printable_lines("a\r\n\x1b]0;title\x07") == "a\\x0d\n\\x1b]0;title\\x07");
}
