// attnjit_prewarm: a manifest's kernels for a set of arches into the cache (jit/prewarm.hpp),
// with a progress callback and one result per kernel.
#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "capi/boundary.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/manifest.hpp"
#include "jit/prewarm.hpp"

// The results the caller reads, and what they point into.
struct attnjit_prewarm_report {
  std::vector<attnjit::NamedVariantSpec> variants;
  std::vector<attnjit::PrewarmJob> jobs;  // point into variants
  std::vector<attnjit::PrewarmOutcome> outcomes;
  std::vector<attnjit_prewarm_result> results;
  std::size_t failures = 0;
};

namespace {

using attnjit::capi::guarded;
using attnjit::capi::optional_text;
using attnjit::capi::require;
using attnjit::capi::require_version;

std::vector<std::string> validated_arches(const attnjit_prewarm_options& o) {
  if (o.num_arches == 0 || o.arches == nullptr) {
    attnjit::throw_error(attnjit::Status::invalid_argument,
                         "attnjit_prewarm_options: give at least one arch (choices: {})",
                         attnjit::nvrtc::supported_arches_text());
  }
  std::vector<std::string> arches;
  for (std::size_t i = 0; i < o.num_arches; ++i) {
    if (o.arches[i] == nullptr) {
      attnjit::throw_error(attnjit::Status::invalid_argument, "arches[{}] is NULL", i);
    }
    const std::string arch = attnjit::nvrtc::validate_arch(o.arches[i]);
    if (std::find(arches.begin(), arches.end(), arch) == arches.end()) arches.push_back(arch);
  }
  return arches;
}

// The C view of one outcome; its strings point into the job and the outcome.
attnjit_prewarm_result to_result(const attnjit::PrewarmJob& job,
                                 const attnjit::PrewarmOutcome& outcome) {
  attnjit_prewarm_result result{};
  result.name = job.variant->name.c_str();
  result.dtype = attnjit::capi::to_c_dtype(job.variant->spec.dtype);
  result.head_dim = job.variant->spec.head_dim;
  result.arch = job.arch.c_str();
  result.status = static_cast<attnjit_status>(outcome.status);
  result.origin = attnjit::capi::to_c_origin(outcome.origin);
  result.error = outcome.failed ? outcome.error.c_str() : nullptr;
  result.not_stored = outcome.not_stored ? 1 : 0;
  return result;
}

std::unique_ptr<attnjit_prewarm_report> run(const attnjit_prewarm_options& o) {
  const std::vector<std::string> arches = validated_arches(o);
  const attnjit::Manifest manifest = o.manifest_path != nullptr
                                         ? attnjit::load_manifest(o.manifest_path)
                                         : attnjit::standard_manifest();
  if (o.jobs < 0) {
    attnjit::throw_error(attnjit::Status::invalid_argument,
                         "attnjit_prewarm_options.jobs is {}; give 0 (one per core) or more",
                         o.jobs);
  }
  auto report = std::make_unique<attnjit_prewarm_report>();
  report->variants = attnjit::expand_manifest(manifest);
  report->jobs = attnjit::prewarm_jobs(report->variants, arches);
  attnjit::KernelCache cache{std::filesystem::path(optional_text(o.cache_dir))};
  attnjit::require_storable(cache, arches);

  std::size_t done = 0;
  const auto on_done = [&](std::size_t index, const attnjit::PrewarmOutcome& outcome) {
    ++done;
    if (o.progress == nullptr) return;
    const attnjit_prewarm_result result = to_result(report->jobs[index], outcome);
    o.progress(o.user_data, done, report->jobs.size(), &result);
  };
  const int workers = o.jobs > 0 ? o.jobs : static_cast<int>(std::thread::hardware_concurrency());
  report->outcomes = attnjit::prewarm(report->jobs, cache, workers, on_done);
  for (std::size_t i = 0; i < report->jobs.size(); ++i) {
    report->results.push_back(to_result(report->jobs[i], report->outcomes[i]));
    report->failures += report->outcomes[i].failed ? 1 : 0;
  }
  return report;
}

}  // namespace

extern "C" {

void attnjit_prewarm_options_init(attnjit_prewarm_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->version = ATTNJIT_PREWARM_OPTIONS_VERSION;
}

attnjit_status attnjit_prewarm(attnjit_prewarm_report** out,
                               const attnjit_prewarm_options* options) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(options, "options");
    require_version(options->version, ATTNJIT_PREWARM_OPTIONS_VERSION, "attnjit_prewarm_options");
    *out = run(*options).release();
  });
}

size_t attnjit_prewarm_report_count(const attnjit_prewarm_report* report) {
  return report != nullptr ? report->results.size() : 0;
}

size_t attnjit_prewarm_report_failures(const attnjit_prewarm_report* report) {
  return report != nullptr ? report->failures : 0;
}

const attnjit_prewarm_result* attnjit_prewarm_report_result(const attnjit_prewarm_report* report,
                                                            size_t index) {
  if (report == nullptr || index >= report->results.size()) return nullptr;
  return &report->results[index];
}

void attnjit_prewarm_report_destroy(attnjit_prewarm_report* report) { delete report; }

}  // extern "C"
