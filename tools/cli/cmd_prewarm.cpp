// attnjit prewarm: compile every variant x dtype x head dim x arch of a manifest into the cache,
// in parallel, so that the first call of a deployed job finds its kernels on disk.
#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "commands.hpp"
#include "common/error.hpp"
#include "common/printable.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/manifest.hpp"
#include "jit/prewarm.hpp"
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

// Note: the variant's name comes from the manifest, a file: escaped before it is printed.
std::string job_name(const PrewarmJob& job) {
  return fmt::format("{} {} d{} {}", printable(job.variant->name),
                     dtype_short_name(job.variant->spec.dtype), job.variant->spec.head_dim,
                     job.arch);
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

void run_prewarm(const PrewarmOptions& options) {
  const Manifest manifest =
      options.manifest.empty() ? standard_manifest() : load_manifest(options.manifest);
  const std::vector<std::string> arches = resolve_arches(options.arches);
  const std::vector<NamedVariantSpec> variants = expand_manifest(manifest);
  const std::vector<PrewarmJob> jobs = prewarm_jobs(variants, arches);
  KernelCache cache{std::filesystem::path(options.cache_dir)};
  require_storable(cache, arches);
  const int workers = std::clamp(
      options.jobs > 0 ? options.jobs : static_cast<int>(std::thread::hardware_concurrency()), 1,
      std::max<int>(1, static_cast<int>(jobs.size())));
  fmt::print(stderr, "prewarm: {} kernels ({} variants of {}, arches {}) into {} with {} jobs\n",
             jobs.size(), manifest.variants.size(), printable(manifest.source),
             fmt::join(arches, ","), printable(cache.root().string()), workers);

  Progress progress("prewarm", jobs.size());
  const std::vector<PrewarmOutcome> outcomes =
      prewarm(jobs, cache, workers, [&](std::size_t index, const PrewarmOutcome& outcome) {
        progress.step(job_name(jobs[index]), outcome.failed);
      });
  progress.finish();

  std::size_t compiled = 0, cached = 0, failed = 0, not_stored = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (outcomes[i].failed) {
      ++failed;
      not_stored += outcomes[i].not_stored ? 1 : 0;
      fmt::print(stderr, "prewarm: FAILED {}: {}\n", job_name(jobs[i]),
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
