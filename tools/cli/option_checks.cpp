#include "option_checks.hpp"

#include <charconv>
#include <cstdint>

namespace attnjit::cli {

const CLI::Validator& non_empty() {
  static const CLI::Validator validator(
      [](const std::string& value) {
        return value.empty() ? std::string("an empty value is not allowed") : std::string();
      },
      "NON-EMPTY");
  return validator;
}

const CLI::Validator& unsigned_64() {
  static const CLI::Validator validator(
      [](const std::string& value) {
        std::uint64_t parsed = 0;
        const char* end = value.data() + value.size();
        const auto [ptr, error] = std::from_chars(value.data(), end, parsed);
        if (value.empty() || error != std::errc{} || ptr != end) {
          return "'" + value + "' is not a decimal integer in 0 .. 18446744073709551615";
        }
        return std::string();
      },
      "UINT64");
  return validator;
}

CLI::Option* add_cache_dir_option(CLI::App& command, std::string& cache_dir) {
  return command
      .add_option("--cache-dir", cache_dir,
                  "cache root (default: ATTNJIT_CACHE_DIR, $XDG_CACHE_HOME/attnjit, "
                  "~/.cache/attnjit)")
      ->check(non_empty());
}

}  // namespace attnjit::cli
