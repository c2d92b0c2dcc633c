// attnjit prewarm: compile every variant x dtype x head dim x arch of a manifest into the cache,
// in parallel, so that the first call of a deployed job finds its kernels on disk.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "jit/kernel_cache.hpp"
#include "jit/manifest.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "local_gpu.hpp"
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
  std::string name() const {
    return fmt::format("{} {} d{} {}", variant->name, dtype_short_name(variant->spec.dtype),
                       variant->spec.head_dim, arch);
  }
};

struct Outcome {
  bool done = false;
  bool failed = false;
  KernelOrigin origin = KernelOrigin::compiled;
  std::string error;
};

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
  const int workers = std::clamp(
      options.jobs > 0 ? options.jobs : static_cast<int>(std::thread::hardware_concurrency()), 1,
      std::max<int>(1, static_cast<int>(jobs.size())));
  fmt::print(stderr, "prewarm: {} kernels ({} variants of {}, arches {}) into {} with {} jobs\n",
             jobs.size(), manifest.variants.size(), manifest.source, fmt::join(arches, ","),
             cache.root().string(), workers);

  std::vector<Outcome> outcomes(jobs.size());
  std::atomic<std::size_t> next{0};
  Progress progress("prewarm", jobs.size());
  const auto work = [&] {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      Outcome& outcome = outcomes[i];
      try {
        outcome.origin = acquire_variant(jobs[i].variant->spec, jobs[i].arch, cache).origin;
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

  std::size_t compiled = 0, cached = 0, failed = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (outcomes[i].failed) {
      ++failed;
      fmt::print(stderr, "prewarm: FAILED {}: {}\n", jobs[i].name(), outcomes[i].error);
    } else if (outcomes[i].origin == KernelOrigin::compiled) {
      ++compiled;
    } else {
      ++cached;
    }
  }
  fmt::print("prewarm: {} compiled, {} already cached, {} failed, {:.2f} s wall ({})\n", compiled,
             cached, failed, progress.seconds(), cache.root().string());
  if (failed > 0) throw CLI::RuntimeError(1);
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
  command->add_option("--cache-dir", options->cache_dir,
                      "cache root (default: ATTNJIT_CACHE_DIR, $XDG_CACHE_HOME/attnjit, "
                      "~/.cache/attnjit)");
  command->callback([options] { run_prewarm(*options); });
}

}  // namespace attnjit::cli
