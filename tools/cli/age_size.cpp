#include "age_size.hpp"

#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "attnjit/attnjit.hpp"

namespace attnjit::cli {
namespace {

template <typename... Args>
[[noreturn]] void invalid(fmt::format_string<Args...> format, Args&&... args) {
  throw c::Error(ATTNJIT_ERROR_INVALID_ARGUMENT, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace

std::uintmax_t parse_size(const std::string& text) {
  std::uintmax_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  std::string unit(ptr, end);
  if (error != std::errc{} || ptr == text.data()) {
    invalid(
        "invalid size '{}' (expected a number of bytes, optionally with K, M, G or T: 512M, "
        "2G)",
        text);
  }
  if (unit.ends_with("iB")) {
    unit.resize(unit.size() - 2);
  } else if (unit.size() > 1 && unit.ends_with("B")) {
    unit.resize(unit.size() - 1);
  }
  int shift = 0;
  if (unit == "K" || unit == "k") {
    shift = 10;
  } else if (unit == "M") {
    shift = 20;
  } else if (unit == "G") {
    shift = 30;
  } else if (unit == "T") {
    shift = 40;
  } else if (!unit.empty() && unit != "B") {
    invalid("invalid size '{}': unknown unit '{}' (expected K, M, G or T)", text, unit);
  }
  if (shift > 0 && value > (std::numeric_limits<std::uintmax_t>::max() >> shift)) {
    invalid("invalid size '{}': too large", text);
  }
  return value << shift;
}

std::chrono::seconds parse_age(const std::string& text) {
  long long value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc{} || ptr == text.data() || ptr + 1 != end || value < 0) {
    invalid("invalid age '{}' (expected a number and a unit: 45s, 30m, 12h, 7d, 2w)", text);
  }
  long long unit = 0;
  switch (*ptr) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 7 * 86400;
      break;
    default:
      invalid("invalid age '{}': unknown unit '{}' (expected s, m, h, d or w)", text, *ptr);
  }
  if (value > std::numeric_limits<long long>::max() / unit) {
    invalid("invalid age '{}': too large", text);
  }
  return std::chrono::seconds(value * unit);
}

std::string format_age(std::chrono::seconds age) {
  const auto s = age.count();
  if (s >= 86400) return fmt::format("{}d", s / 86400);
  if (s >= 3600) return fmt::format("{}h", s / 3600);
  if (s >= 60) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
}

}  // namespace attnjit::cli
