// The ages and sizes `attnjit cache` reads and prints ("7d", "512M"); the C API takes seconds
// and bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace attnjit::cli {

// "512M", "2G", "100K", "1T", "4096" -> bytes (K, M, G, T are powers of 1024; a trailing "B" or
// "iB" is allowed). Throws attnjit::c::Error (invalid argument).
std::uintmax_t parse_size(const std::string& text);

// "7d", "12h", "30m", "45s", "2w" -> seconds. Throws attnjit::c::Error (invalid argument).
std::chrono::seconds parse_age(const std::string& text);
std::string format_age(std::chrono::seconds age);  // "3d", "5h", "12m", "40s"

}  // namespace attnjit::cli
