// The library's one logger ("attnjit", to stderr). Its level comes from ATTNJIT_LOG_LEVEL
// (trace, debug, info, warn, error, critical, off; default warn) and can be changed at run time.
#pragma once

#include <string_view>

#include <spdlog/spdlog.h>

namespace attnjit {

spdlog::logger& log();

// Accepts spdlog's level names; throws Error(invalid_argument) for anything else.
void set_log_level(std::string_view level);
void set_log_level(spdlog::level::level_enum level);

}  // namespace attnjit
