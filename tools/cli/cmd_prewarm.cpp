// attnjit prewarm: compile every variant x dtype x head dim x arch of a manifest into the cache,
// in parallel, so that the first call of a deployed job finds its kernels on disk.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "cache/entry_name.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "common/printable.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/manifest.hpp"
#include "local_gpu.hpp"
#include "option_checks.hpp"
#include "progress.hpp"

namespace attnjit::cli {
namespace {

struct PrewarmOptions {
  std::string manifest;
  std::vector<std::string> arches;
  int jobs = 0;
  std::string cache_dir;
};

struct Job {
  const NamedVariantSpec* variant;
  std::string arch;
  // Note: the variant's name comes from the manifest, a file: escaped before it is printed.
  std::string name() const {
    return fmt::format("{} {} d{} {}", printable(variant->name),
                       dtype_short_name(variant->spec.dtype), variant->spec.head_dim, arch);
  }
};

struct Outcome {
  bool done = false;
  bool failed = false;
  bool not_stored = false;  // compiled, but the cache could not keep it: a failure too
  KernelOrigin origin = KernelOrigin::compiled;
  std::string error;
};

namespace fs = std::filesystem;

// Why kernels cannot be stored in `dir`, judged from its deepest existing ancestor without
// creating anything: that ancestor is not a directory, or this process may not write into it
// (permissions, a read-only filesystem). Empty when nothing there stands in the way.
std::string why_unwritable(const fs::path& dir) {
  std::error_code ec;
  fs::path existing = fs::absolute(dir, ec);
  while (!fs::exists(existing, ec) && existing != existing.root_path()) {
    existing = existing.parent_path();
  }
  if (!fs::is_directory(existing, ec)) {
    return fmt::format("{} is not a directory", existing.string());
  }
  if (::faccessat(AT_FDCWD, existing.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
    return fmt::format("{}: {}", existing.string(), std::generic_category().message(errno));
  }
  return {};
}

std::vector<std::string> resolve_arches(const std::vector<std::string>& requested) {
  std::vector<std::string> arches;
  if (requested.empty()) {
    const auto local = local_gpu_arch();
    if (!local) {
      throw_error(Status::no_device, "no GPU found; pass --arch (choices: {})",
                  nvrtc::supported_arches_text());
    }
    arches.push_back(*local);
  }
  for (const auto& arch : requested) {
    const std::string valid = nvrtc::validate_arch(arch);
    if (std::find(arches.begin(), arches.end(), valid) == arches.end()) arches.push_back(valid);
  }
  return arches;
}

// The folder the cache stores `arch`'s kernels in for this NVRTC.
fs::path arch_directory(const KernelCache& cache, const std::string& arch) {
  return cache.store().directory(cache::EntryId{arch, nvrtc::nvrtc_version(), {}, {}, {}});
}

void run_prewarm(const PrewarmOptions& options) {
  const Manifest manifest =
      options.manifest.empty() ? standard_manifest() : load_manifest(options.manifest);
  const std::vector<std::string> arches = resolve_arches(options.arches);
  const std::vector<NamedVariantSpec> variants = expand_manifest(manifest);
  std::vector<Job> jobs;
  for (const auto& variant : variants) {
    for (const auto& arch : arches) jobs.push_back({&variant, arch});
  }
  KernelCache cache{std::filesystem::path(options.cache_dir)};
  // Prewarming exists to fill the cache: a root that cannot hold it fails now, not after every
  // kernel was compiled into memory only.
  try {
    cache.store().create_root();  // private (0700) whatever the umask, and checked
  } catch (const Error& e) {
    throw_error(e.status(), "cannot use {} as the cache directory: {}", cache.root().string(),
                e.what());
  }
  for (const auto& arch : arches) {
    const fs::path dir = arch_directory(cache, arch);
    if (const std::string why = why_unwritable(dir); !why.empty()) {
      throw_error(Status::io, "cannot store kernels in {}: {}; nothing was compiled", dir.string(),
                  why);
    }
  }
  const int workers = std::clamp(
      options.jobs > 0 ? options.jobs : static_cast<int>(std::thread::hardware_concurrency()), 1,
      std::max<int>(1, static_cast<int>(jobs.size())));
  fmt::print(stderr, "prewarm: {} kernels ({} variants of {}, arches {}) into {} with {} jobs\n",
             jobs.size(), manifest.variants.size(), printable(manifest.source),
             fmt::join(arches, ","), printable(cache.root().string()), workers);

  std::vector<Outcome> outcomes(jobs.size());
  std::atomic<std::size_t> next{0};
  Progress progress("prewarm", jobs.size());
  const auto work = [&] {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      Outcome& outcome = outcomes[i];
      try {
        const VariantKernel kernel = acquire_variant(jobs[i].variant->spec, jobs[i].arch, cache);
        outcome.origin = kernel.origin;
        if (kernel.binary->path.empty()) {
          const std::string why =
              why_unwritable(arch_directory(cache, jobs[i].arch));
          outcome.failed = outcome.not_stored = true;
          outcome.error =
              "compiled, but the cache could not store it: " +
              (why.empty() ? std::string("see the cache's warning (--log-level warn)") : why);
        }
      } catch (const std::exception& e) {
        outcome.failed = true;
        outcome.error = e.what();
      }
      outcome.done = true;
      progress.step(jobs[i].name(), outcome.failed);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) threads.emplace_back(work);
  for (auto& thread : threads) thread.join();
  progress.finish();

  std::size_t compiled = 0, cached = 0, failed = 0, not_stored = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (outcomes[i].failed) {
      ++failed;
      not_stored += outcomes[i].not_stored ? 1 : 0;
      fmt::print(stderr, "prewarm: FAILED {}: {}\n", jobs[i].name(),
                 printable_lines(outcomes[i].error));
    } else if (outcomes[i].origin == KernelOrigin::compiled) {
      ++compiled;
    } else {
      ++cached;
    }
  }
  fmt::print("prewarm: {} compiled, {} already cached, {} failed, {:.2f} s wall ({})\n", compiled,
             cached, failed, progress.seconds(), printable(cache.root().string()));
  if (failed > 0) {
    fmt::print(stderr,
               "prewarm: {} of {} kernels failed ({} compiled but not stored); the cache "
               "is not ready\n",
               failed, jobs.size(), not_stored);
    throw CLI::RuntimeError(1);
  }
}

}  // namespace

void add_prewarm_command(CLI::App& app) {
  auto options = std::make_shared<PrewarmOptions>();
  CLI::App* command = app.add_subcommand(
      "prewarm", "Compile every variant x dtype x head dim x arch of a manifest into the cache");
  command->add_option("--manifest", options->manifest,
                      "manifest JSON file (default: the embedded standard manifest)")
      ->check(CLI::ExistingFile);
  command->add_option("--arch", options->arches,
                      "target arches, comma-separated: sm_80, sm_86, sm_89, sm_90, sm_90a "
                      "(default: the local GPU's)")
      ->delimiter(',');
  command->add_option("--jobs,-j", options->jobs, "parallel compiles (default: number of cores)")
      ->check(CLI::Range(1, 4096));
  add_cache_dir_option(*command, options->cache_dir);
  command->callback([options] { run_prewarm(*options); });
}

}  // namespace attnjit::cli
