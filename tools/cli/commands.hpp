// One function per command; each registers a subcommand whose callback does the work.
// A command fails by throwing attnjit::Error (reported by main, exit 1) or CLI::RuntimeError(code)
// after printing its own message.
#pragma once

#include <CLI/CLI.hpp>

namespace attnjit::cli {

void add_check_command(CLI::App& app);    // cmd_check.cpp
void add_run_command(CLI::App& app);      // cmd_run.cpp
void add_demo_command(CLI::App& app);     // cmd_demo.cpp
void add_prewarm_command(CLI::App& app);  // cmd_prewarm.cpp
void add_inspect_command(CLI::App& app);  // cmd_inspect.cpp
void add_cache_command(CLI::App& app);    // cmd_cache.cpp
void add_bench_command(CLI::App& app);    // cmd_bench.cpp

}  // namespace attnjit::cli
