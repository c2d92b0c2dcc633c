// attnjit cache path|list|verify|clear: look after the on-disk kernel cache, through the C API
// (attnjit_cache_path, attnjit_cache_list_create, attnjit_cache_verify, attnjit_cache_clear).
#include <fmt/format.h>

#include <chrono>
#include <limits>

#include "age_size.hpp"
#include "attnjit/attnjit.hpp"
#include "commands.hpp"
#include "option_checks.hpp"
#include "printable.hpp"
#include "public_variant.hpp"

namespace attnjit::cli {
namespace {

struct CacheOptions {
  std::string cache_dir;
  std::string arch;
  std::string older_than;
  std::string max_size;

  const char* dir() const { return cache_dir.empty() ? nullptr : cache_dir.c_str(); }
};

std::string human_size(std::uintmax_t bytes) {
  if (bytes >= (1u << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= (1u << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / (1 << 10));
  return fmt::format("{} B", bytes);
}

// Every entry of the cache (verified or not); the arch filter is the caller's.
c::CacheListPtr entries(const CacheOptions& options, bool verify, std::size_t* num_bad = nullptr) {
  attnjit_cache_list_options list_options;
  attnjit_cache_list_options_init(&list_options);
  list_options.cache_dir = options.dir();
  attnjit_cache_list* list = nullptr;
  c::check(verify ? attnjit_cache_verify(&list, num_bad, &list_options)
                  : attnjit_cache_list_create(&list, &list_options));
  return c::CacheListPtr(list);
}

// Note: every field of a listed entry comes from the disk (directory and file names, sidecar
// contents), which anyone who can write the cache controls: each is escaped before printing.
void run_list(const CacheOptions& options) {
  const c::CacheListPtr list = entries(options, /*verify=*/false);
  const std::size_t count = attnjit_cache_list_count(list.get());
  std::uintmax_t total = 0;
  std::size_t shown = 0;
  fmt::print("{:<7} {:<6} {:<42} {:>10} {:>5}  {}\n", "ARCH", "CUDA", "ENTRY", "SIZE", "AGE",
             "VARIANT");
  for (std::size_t i = 0; i < count; ++i) {
    const attnjit_cache_entry& entry = *attnjit_cache_list_entry(list.get(), i);
    if (!options.arch.empty() && entry.arch != options.arch) continue;
    ++shown;
    total += entry.size_bytes;
    fmt::print("{:<7} {:<6} {:<42} {:>10} {:>5}  {}\n", printable(entry.arch),
               printable(entry.cuda_version), printable(entry.name), human_size(entry.size_bytes),
               format_age(std::chrono::seconds(entry.age_seconds)), printable(entry.summary));
  }
  const std::string filter =
      options.arch.empty() ? std::string()
                           : fmt::format(" for {} ({} in all)", printable(options.arch), count);
  fmt::print("{} entries{}, {} in {}\n", shown, filter, human_size(total),
             printable(cache_root(options.cache_dir)));
}

void run_verify(const CacheOptions& options) {
  std::size_t num_bad = 0;
  const c::CacheListPtr list = entries(options, /*verify=*/true, &num_bad);
  const std::size_t count = attnjit_cache_list_count(list.get());
  for (std::size_t i = 0; i < count; ++i) {
    const attnjit_cache_entry& entry = *attnjit_cache_list_entry(list.get(), i);
    if (entry.problem == nullptr) continue;
    fmt::print(stderr, "bad entry {} ({} cuda-{}): {}\n", printable(entry.sidecar_path),
               printable(entry.arch), printable(entry.cuda_version), printable(entry.problem));
  }
  fmt::print("{} entries checked, {} bad\n", count, num_bad);
  if (num_bad != 0) {
    fmt::print(stderr,
               "run `attnjit cache clear` to remove them, or use them: a damaged entry is "
               "recompiled on its next use\n");
    throw CLI::RuntimeError(1);
  }
}

// Note: a filter given with an empty value is refused by its option (non_empty), never read as
// "no filter", which would clear the whole cache.
void run_clear(const CacheOptions& options) {
  attnjit_cache_clear_options clear;
  attnjit_cache_clear_options_init(&clear);
  clear.cache_dir = options.dir();
  clear.arch = options.arch.empty() ? nullptr : options.arch.c_str();
  if (!options.older_than.empty()) clear.older_than_seconds = parse_age(options.older_than).count();
  if (!options.max_size.empty()) {
    // A limit past INT64_MAX bytes keeps everything, as INT64_MAX does.
    clear.max_bytes = static_cast<std::int64_t>(std::min<std::uintmax_t>(
        parse_size(options.max_size), std::numeric_limits<std::int64_t>::max()));
  }
  attnjit_cache_clear_result result{};
  c::check(attnjit_cache_clear(&result, &clear));
  fmt::print("removed {} entries ({} files, {}) from {}\n", result.entries, result.files,
             human_size(result.bytes), printable(cache_root(options.cache_dir)));
}

}  // namespace

void add_cache_command(CLI::App& app) {
  auto options = std::make_shared<CacheOptions>();
  CLI::App* command = app.add_subcommand("cache", "Show, check or clear the kernel cache");
  command->require_subcommand(1);
  const auto add_dir = [&](CLI::App* sub) { add_cache_dir_option(*sub, options->cache_dir); };
  CLI::App* path = command->add_subcommand("path", "Print the cache root");
  add_dir(path);
  path->callback([options] { fmt::print("{}\n", printable(cache_root(options->cache_dir))); });

  CLI::App* list =
      command->add_subcommand("list", "List entries: arch, CUDA, name, size, age, variant");
  add_dir(list);
  list->add_option("--arch", options->arch, "only this arch")->check(non_empty());
  list->callback([options] { run_list(*options); });

  CLI::App* verify = command->add_subcommand(
      "verify", "Check every entry as the loader does (exit 1 if any is bad)");
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
