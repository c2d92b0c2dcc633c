// Option checks that CLI11 lacks, and the --cache-dir option every cache-using command shares.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace attnjit::cli {

// Refuses an explicitly empty value (`--max-size ''`, an unset shell variable), which would
// otherwise read as "not given" and fall back to the default: for a filter, the whole cache.
const CLI::Validator& non_empty();

// A decimal integer in 0 .. 2^64-1. Note: CLI11 reads unsigned options with strtoull, which
// saturates an overflow to 2^64-1 and wraps a negative number, both without an error.
const CLI::Validator& unsigned_64();

// --cache-dir DIR (non-empty), with the default spelled out in the help.
CLI::Option* add_cache_dir_option(CLI::App& command, std::string& cache_dir);

}  // namespace attnjit::cli
