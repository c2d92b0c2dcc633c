// attnjit prewarm: compile every variant x dtype x head dim x arch of a manifest into the cache,
// in parallel (attnjit_prewarm), so that the first call of a deployed job finds its kernels on
// disk.
#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "attnjit/attnjit.hpp"
#include "commands.hpp"
#include "failure.hpp"
#include "option_checks.hpp"
#include "printable.hpp"
#include "progress.hpp"
#include "public_variant.hpp"
#include "testkit/host_data.hpp"

namespace attnjit::cli {
namespace {

struct PrewarmOptions {
  std::string manifest;
  std::vector<std::string> arches;
  int jobs = 0;
  std::string cache_dir;
};

// Note: the variant's name comes from the manifest, a file: escaped before it is printed.
std::string job_name(const attnjit_prewarm_result& result) {
  return fmt::format("{} {} d{} {}", printable(result.name),
                     testkit::dtype_short_name(result.dtype), result.head_dim, result.arch);
}

std::vector<std::string> resolve_arches(const std::vector<std::string>& requested) {
  std::vector<std::string> arches;
  if (requested.empty()) {
    const auto local = local_gpu_arch();
    if (!local) {
      fail(ATTNJIT_ERROR_NO_DEVICE, "no GPU found; pass --arch (choices: {})",
           attnjit_supported_arches());
    }
    arches.push_back(*local);
  }
  for (const auto& arch : requested) {
    if (std::find(arches.begin(), arches.end(), arch) == arches.end()) arches.push_back(arch);
  }
  return arches;
}

// How many kernels the manifest makes for `num_arches` arches.
std::size_t kernel_count(const attnjit_manifest* manifest, std::size_t num_arches) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < attnjit_manifest_count(manifest); ++i) {
    const attnjit_manifest_variant* variant = attnjit_manifest_variant_at(manifest, i);
    count += static_cast<std::size_t>(variant->num_dtypes) *
             static_cast<std::size_t>(variant->num_head_dims) * num_arches;
  }
  return count;
}

// The header line and the bar. Note: the header waits for the first finished kernel, because
// attnjit_prewarm checks the arches and the cache before it compiles anything: a refused request
// prints its error alone, not a plan that will not be carried out.
struct PrewarmDisplay {
  std::string header;
  Progress progress;
  std::once_flag announced;

  void announce() {
    std::call_once(announced, [this] { fmt::print(stderr, "{}\n", header); });
  }
};

// Progress callback: one step of the bar per finished kernel.
void on_kernel(void* display, std::size_t, std::size_t, const attnjit_prewarm_result* result) {
  auto& d = *static_cast<PrewarmDisplay*>(display);
  d.announce();
  d.progress.step(job_name(*result), result->status != ATTNJIT_OK);
}

void run_prewarm(const PrewarmOptions& options) {
  attnjit_manifest* raw_manifest = nullptr;
  c::check(attnjit_manifest_load(&raw_manifest,
                                 options.manifest.empty() ? nullptr : options.manifest.c_str()));
  const c::ManifestPtr manifest(raw_manifest);
  const std::vector<std::string> arches = resolve_arches(options.arches);
  std::vector<const char*> arch_names;
  for (const auto& arch : arches) arch_names.push_back(arch.c_str());
  const std::size_t kernels = kernel_count(manifest.get(), arches.size());
  const int workers = std::clamp(
      options.jobs > 0 ? options.jobs : static_cast<int>(std::thread::hardware_concurrency()), 1,
      std::max<int>(1, static_cast<int>(kernels)));
  const std::string root = cache_root(options.cache_dir);

  PrewarmDisplay display{
      fmt::format("prewarm: {} kernels ({} variants of {}, arches {}) into {} with {} jobs",
                  kernels, attnjit_manifest_count(manifest.get()),
                  printable(attnjit_manifest_source(manifest.get())), fmt::join(arches, ","),
                  printable(root), workers),
      Progress("prewarm", kernels),
      {}};
  attnjit_prewarm_options prewarm_options;
  attnjit_prewarm_options_init(&prewarm_options);
  prewarm_options.manifest_path = options.manifest.empty() ? nullptr : options.manifest.c_str();
  prewarm_options.arches = arch_names.data();
  prewarm_options.num_arches = arch_names.size();
  prewarm_options.cache_dir = options.cache_dir.empty() ? nullptr : options.cache_dir.c_str();
  prewarm_options.jobs = workers;
  prewarm_options.progress = &on_kernel;
  prewarm_options.user_data = &display;
  attnjit_prewarm_report* raw_report = nullptr;
  c::check(attnjit_prewarm(&raw_report, &prewarm_options));
  const c::PrewarmReportPtr report(raw_report);
  display.announce();  // a manifest without kernels finishes none
  Progress& progress = display.progress;
  progress.finish();

  std::size_t compiled = 0, cached = 0, failed = 0, not_stored = 0;
  for (std::size_t i = 0; i < attnjit_prewarm_report_count(report.get()); ++i) {
    const attnjit_prewarm_result& result = *attnjit_prewarm_report_result(report.get(), i);
    if (result.status != ATTNJIT_OK) {
      ++failed;
      not_stored += result.not_stored != 0 ? 1 : 0;
      fmt::print(stderr, "prewarm: FAILED {}: {}\n", job_name(result),
                 printable_lines(result.error));
    } else if (result.origin == ATTNJIT_ORIGIN_COMPILED) {
      ++compiled;
    } else {
      ++cached;
    }
  }
  fmt::print("prewarm: {} compiled, {} already cached, {} failed, {:.2f} s wall ({})\n", compiled,
             cached, failed, progress.seconds(), printable(root));
  if (failed > 0) {
    fmt::print(stderr,
               "prewarm: {} of {} kernels failed ({} compiled but not stored); the cache "
               "is not ready\n",
               failed, attnjit_prewarm_report_count(report.get()), not_stored);
    throw CLI::RuntimeError(1);
  }
}

}  // namespace

void add_prewarm_command(CLI::App& app) {
  auto options = std::make_shared<PrewarmOptions>();
  CLI::App* command = app.add_subcommand(
      "prewarm", "Compile every variant x dtype x head dim x arch of a manifest into the cache");
  command
      ->add_option("--manifest", options->manifest,
                   "manifest JSON file (default: the embedded standard manifest)")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--arch", options->arches,
                   "target arches, comma-separated: sm_80, sm_86, sm_89, sm_90, sm_90a "
                   "(default: the local GPU's)")
      ->delimiter(',');
  command->add_option("--jobs,-j", options->jobs, "parallel compiles (default: number of cores)")
      ->check(CLI::Range(1, 4096));
  add_cache_dir_option(*command, options->cache_dir);
  command->callback([options] { run_prewarm(*options); });
}

}  // namespace attnjit::cli
