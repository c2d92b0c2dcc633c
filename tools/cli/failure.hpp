// How a command fails with a message of its own: attnjit::c::Error, the exception the C API's
// statuses become, so that main reports the CLI's errors and the library's alike
// ("attnjit: <status>: <message>", exit 1).
#pragma once

#include <fmt/format.h>

#include "attnjit/attnjit.hpp"

namespace attnjit::cli {

template <typename... Args>
[[noreturn]] void fail(attnjit_status status, fmt::format_string<Args...> format, Args&&... args) {
  throw c::Error(status, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace attnjit::cli
