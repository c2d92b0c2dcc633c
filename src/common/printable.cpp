#include "common/printable.hpp"

#include <fmt/format.h>

namespace attnjit {
namespace {

std::string escape(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte >= 0x20 && byte < 0x7f) || (keep_newlines && c == '\n')) {
      out += c;
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  return out;
}

}  // namespace

std::string printable(std::string_view text) { return escape(text, false); }

std::string printable_lines(std::string_view text) { return escape(text, true); }

}  // namespace attnjit
