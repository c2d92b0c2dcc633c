// attnjit cache path|list|verify|clear: look after the on-disk kernel cache.
#include <fmt/format.h>

#include "cache/cache_admin.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "common/printable.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "option_checks.hpp"

namespace attnjit::cli {
namespace {

struct CacheOptions {
  std::string cache_dir;
  std::string arch;
  std::string older_than;
  std::string max_size;

  std::filesystem::path root() const {
    return cache_dir.empty() ? cache::default_cache_dir() : std::filesystem::path(cache_dir);
  }
};

std::string human_size(std::uintmax_t bytes) {
  if (bytes >= (1u << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= (1u << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / (1 << 10));
  return fmt::format("{} B", bytes);
}

// Note: every field of a listed entry comes from the disk (directory and file names, sidecar
// contents), which anyone who can write the cache controls: each is escaped before printing.
void run_list(const CacheOptions& options) {
  const auto entries = cache::list_entries(options.root());
  std::uintmax_t total = 0;
  std::size_t shown = 0;
  fmt::print("{:<7} {:<6} {:<42} {:>10} {:>5}  {}\n", "ARCH", "CUDA", "ENTRY", "SIZE", "AGE",
             "VARIANT");
  for (const auto& entry : entries) {
    if (!options.arch.empty() && entry.arch != options.arch) continue;
    ++shown;
    total += entry.size;
    fmt::print("{:<7} {:<6} {:<42} {:>10} {:>5}  {}\n", printable(entry.arch),
               printable(entry.cuda_version), printable(entry.name), human_size(entry.size),
               cache::format_age(entry.age), printable(entry.summary));
  }
  const std::string filter =
      options.arch.empty()
          ? std::string()
          : fmt::format(" for {} ({} in all)", printable(options.arch), entries.size());
  fmt::print("{} entries{}, {} in {}\n", shown, filter, human_size(total),
             printable(options.root().string()));
}

void run_verify(const CacheOptions& options) {
  const auto entries = cache::list_entries(options.root());
  const auto problems = cache::verify_entries(options.root());
  for (const auto& problem : problems) {
    fmt::print(stderr, "bad entry {} ({} cuda-{}): {}\n", printable(problem.entry.sidecar.string()),
               printable(problem.entry.arch), printable(problem.entry.cuda_version),
               printable(problem.reason));
  }
  fmt::print("{} entries checked, {} bad\n", entries.size(), problems.size());
  if (!problems.empty()) {
    fmt::print(stderr, "run `attnjit cache clear` to remove them, or use them: a damaged entry is "
               "recompiled on its next use\n");
    throw CLI::RuntimeError(1);
  }
}

// Note: a filter given with an empty value is refused by its option (non_empty), never read as
// "no filter", which would clear the whole cache.
void run_clear(const CacheOptions& options) {
  cache::ClearFilter filter;
  if (!options.arch.empty()) filter.arch = nvrtc::validate_arch(options.arch);
  if (!options.older_than.empty()) filter.older_than = cache::parse_age(options.older_than);
  if (!options.max_size.empty()) filter.max_bytes = cache::parse_size(options.max_size);
  const auto result = cache::clear_entries(options.root(), filter);
  fmt::print("removed {} entries ({} files, {}) from {}\n", result.entries, result.files,
             human_size(result.bytes), printable(options.root().string()));
}

}  // namespace

void add_cache_command(CLI::App& app) {
  auto options = std::make_shared<CacheOptions>();
  CLI::App* command = app.add_subcommand("cache", "Show, check or clear the kernel cache");
  command->require_subcommand(1);
  const auto add_dir = [&](CLI::App* sub) { add_cache_dir_option(*sub, options->cache_dir); };
  CLI::App* path = command->add_subcommand("path", "Print the cache root");
  add_dir(path);
  path->callback([options] { fmt::print("{}\n", printable(options->root().string())); });

  CLI::App* list = command->add_subcommand("list", "List entries: arch, CUDA, name, size, age, variant");
  add_dir(list);
  list->add_option("--arch", options->arch, "only this arch")->check(non_empty());
  list->callback([options] { run_list(*options); });

  CLI::App* verify = command->add_subcommand("verify", "Check every entry as the loader does (exit 1 if any is bad)");
  add_dir(verify);
  verify->callback([options] { run_verify(*options); });

  CLI::App* clear = command->add_subcommand("clear", "Remove entries (all, or filtered)");
  add_dir(clear);
  clear->add_option("--arch", options->arch, "only entries of this arch")->check(non_empty());
  clear
      ->add_option("--older-than", options->older_than,
                   "only entries at least this old: 45s, 30m, 12h, 7d, 2w")
      ->check(non_empty());
  clear
      ->add_option("--max-size", options->max_size,
                   "remove the least recently used entries until the rest fit: 512M, 2G")
      ->check(non_empty());
  clear->callback([options] { run_clear(*options); });
}

}  // namespace attnjit::cli
