// attnjit: the command-line client, built on the public C API (attnjit.h) like any host program.
// Each command lives in its own cmd_*.cpp.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "attnjit/attnjit.hpp"
#include "commands.hpp"
#include "failure.hpp"
#include "printable.hpp"

namespace {

// The message for an argument where a subcommand belongs ("attnjit frobnicate", "attnjit cache
// lst"), or nothing when the error is another one. CLI11 would say "A subcommand is required".
std::optional<std::string> unknown_subcommand(const CLI::App& app) {
  const CLI::App* command = &app;
  std::string path = "attnjit";
  while (!command->get_subcommands().empty()) {
    command = command->get_subcommands().front();
    path += " " + command->get_name();
  }
  if (command->get_require_subcommand_min() == 0) return std::nullopt;
  const std::vector<std::string> rest = command->remaining();
  if (rest.empty() || rest.front().starts_with("-")) return std::nullopt;
  return fmt::format("unknown subcommand '{}'; try {} --help",
                     attnjit::cli::printable(rest.front()), path);
}

attnjit_log_level parse_log_level(const std::string& name) {
  if (name == "trace") return ATTNJIT_LOG_TRACE;
  if (name == "debug") return ATTNJIT_LOG_DEBUG;
  if (name == "info") return ATTNJIT_LOG_INFO;
  if (name == "warn" || name == "warning") return ATTNJIT_LOG_WARN;
  if (name == "error" || name == "err") return ATTNJIT_LOG_ERROR;
  if (name == "off") return ATTNJIT_LOG_OFF;
  attnjit::cli::fail(ATTNJIT_ERROR_INVALID_ARGUMENT,
                     "unknown log level '{}' (expected trace, debug, info, warn, error or off)",
                     attnjit::cli::printable(name));
}

}  // namespace

int main(int argc, char** argv) {
  // Note: the library reads ATTNJIT_LOG_LEVEL when its log is first used, and warns there about a
  // value it does not know; a command that logs nothing would otherwise ignore a bad value.
  attnjit_set_log_level(ATTNJIT_LOG_DEFAULT);
  CLI::App app{"attnjit: JIT-compiled custom attention for NVIDIA GPUs", "attnjit"};
  app.set_version_flag("--version", attnjit_version());
  app.require_subcommand(1);
  std::string log_level;
  app.add_option("--log-level", log_level,
                 "trace, debug, info, warn, error or off (default: ATTNJIT_LOG_LEVEL, else warn)");
  app.parse_complete_callback([&] {
    if (!log_level.empty()) attnjit::c::check(attnjit_set_log_level(parse_log_level(log_level)));
  });
  attnjit::cli::add_check_command(app);
  attnjit::cli::add_run_command(app);
  attnjit::cli::add_demo_command(app);
  attnjit::cli::add_prewarm_command(app);
  attnjit::cli::add_inspect_command(app);
  attnjit::cli::add_cache_command(app);
  attnjit::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (const auto message = unknown_subcommand(app)) {
      fmt::print(stderr, "attnjit: {}\n", *message);
      return e.get_exit_code();
    }
    return app.exit(e);
  } catch (const attnjit::c::Error& e) {
    // Note: messages quote manifests, sidecars and file names: escaped, line breaks kept.
    fmt::print(stderr, "attnjit: {}: {}\n", attnjit_status_string(e.status()),
               attnjit::cli::printable_lines(e.what()));
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "attnjit: out of memory: out of host memory\n");
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "attnjit: internal error: {}\n", attnjit::cli::printable_lines(e.what()));
    return 1;
  }
  return 0;
}
