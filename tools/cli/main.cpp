// attnjit: the command-line client. Each command lives in its own cmd_*.cpp.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <new>

#include "attnjit/attnjit.h"
#include "commands.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

int main(int argc, char** argv) {
  CLI::App app{"attnjit: JIT-compiled custom attention for NVIDIA GPUs", "attnjit"};
  app.set_version_flag("--version", attnjit_version());
  app.require_subcommand(1);
  std::string log_level;
  app.add_option("--log-level", log_level,
                 "trace, debug, info, warn, error or off (default: ATTNJIT_LOG_LEVEL, else warn)");
  app.parse_complete_callback([&] {
    if (!log_level.empty()) attnjit::set_log_level(log_level);
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
    return app.exit(e);
  } catch (const attnjit::Error& e) {
    fmt::print(stderr, "attnjit: {}: {}\n", attnjit::status_name(e.status()), e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "attnjit: out of memory: out of host memory\n");
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "attnjit: internal error: {}\n", e.what());
    return 1;
  }
  return 0;
}
