#include "common/log.hpp"

#include <cstdlib>
#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>

#include "common/error.hpp"

namespace attnjit {
namespace {

spdlog::level::level_enum parse_level(std::string_view name) {
  const auto level = spdlog::level::from_str(std::string(name));
  // from_str maps unknown names to "off"; only accept "off" when it was asked for.
  if (level == spdlog::level::off && name != "off") {
    throw_error(Status::invalid_argument,
                "unknown log level '{}' (expected trace, debug, info, warn, error, critical or off)",
                name);
  }
  return level;
}

std::shared_ptr<spdlog::logger> make_logger() {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("attnjit", std::move(sink));
  logger->set_pattern("[attnjit] [%l] %v");
  logger->set_level(spdlog::level::warn);
  if (const char* env = std::getenv("ATTNJIT_LOG_LEVEL"); env != nullptr && *env != '\0') {
    try {
      logger->set_level(parse_level(env));
    } catch (const Error& e) {
      logger->warn("ATTNJIT_LOG_LEVEL ignored: {}", e.what());
    }
  }
  return logger;
}

}  // namespace

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = make_logger();
  return *logger;
}

void set_log_level(std::string_view level) { log().set_level(parse_level(level)); }
void set_log_level(spdlog::level::level_enum level) { log().set_level(level); }

}  // namespace attnjit
