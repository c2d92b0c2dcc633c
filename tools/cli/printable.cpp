#include "printable.hpp"

#include "attnjit/attnjit.h"

namespace attnjit::cli {
namespace {

std::string escaped(const std::string& text, int keep_line_breaks) {
  const std::size_t length = attnjit_printable(nullptr, 0, text.c_str(), keep_line_breaks);
  std::string result(length, '\0');
  // Note: writes length characters and the NUL, which std::string keeps room for.
  attnjit_printable(result.data(), length + 1, text.c_str(), keep_line_breaks);
  return result;
}

}  // namespace

std::string printable(const std::string& text) { return escaped(text, 0); }
std::string printable_lines(const std::string& text) { return escaped(text, 1); }

}  // namespace attnjit::cli
