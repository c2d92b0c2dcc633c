#include "jit/prewarm.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <system_error>

#include "common/workers.hpp"
#include "compile/nvrtc_compiler.hpp"

namespace attnjit {
namespace {

namespace fs = std::filesystem;

// The folder the cache stores `arch`'s kernels in for this NVRTC.
fs::path arch_directory(const KernelCache& cache, const std::string& arch) {
  return cache.store().directory(cache::EntryId{arch, nvrtc::nvrtc_version(), {}, {}, {}});
}

// Fails `outcome` when `kernel` was compiled but not stored.
void require_stored(const VariantKernel& kernel, const PrewarmJob& job, KernelCache& cache,
                    PrewarmOutcome& outcome) {
  if (!kernel.binary->path.empty()) return;
  const std::string why = why_unwritable(arch_directory(cache, job.arch));
  outcome.failed = outcome.not_stored = true;
  outcome.status = Status::cache;
  outcome.error = "compiled, but the cache could not store it: " +
                  (why.empty() ? std::string("see the cache's warning (log level warn)") : why);
}

PrewarmOutcome run_job(const PrewarmJob& job, KernelCache& cache) {
  PrewarmOutcome outcome;
  try {
    const VariantKernel kernel = acquire_variant(job.variant->spec, job.arch, cache);
    outcome.origin = kernel.origin;
    require_stored(kernel, job, cache, outcome);
    if (!outcome.failed && kernel.binary->config.family == codegen::KernelFamily::sm90) {
      // Note: a variant served by the sm90 kernel still runs some calls on the sm80 kernel of
      // the same arch (split-KV decoding steps, strides TMA cannot load), and those with short
      // rows on its short-rows kernel where it has one: a prewarmed fleet must not compile
      // either on the first such call.
      const VariantSpec& spec = job.variant->spec;
      const ParsedVariant parsed = parse_variant(spec);
      const VariantKernel fallback = acquire_variant(spec, parsed, job.arch, cache,
                                                     /*ptx=*/false, codegen::FamilyRequest::sm80);
      if (fallback.origin == KernelOrigin::compiled) outcome.origin = KernelOrigin::compiled;
      require_stored(fallback, job, cache, outcome);
      // The split kernel too (calls of too few query tiles to fill the GPU), unless a schedule
      // tuning names the one kernel that serves every call.
      if (!outcome.failed && !codegen::schedule_tuning_requested()) {
        const VariantKernel split =
            acquire_variant(spec, parsed, job.arch, cache, /*ptx=*/false,
                            codegen::FamilyRequest::sm90, codegen::Schedule::split_kv);
        if (split.origin == KernelOrigin::compiled) outcome.origin = KernelOrigin::compiled;
        require_stored(split, job, cache, outcome);
      }
      if (!outcome.failed && !codegen::schedule_tuning_requested() &&
          codegen::has_short_rows_schedule(kernel.binary->config, spec.head_dim, parsed.mask)) {
        const VariantKernel short_rows =
            acquire_variant(spec, parsed, job.arch, cache, /*ptx=*/false,
                            codegen::FamilyRequest::sm90, codegen::Schedule::short_rows);
        if (short_rows.origin == KernelOrigin::compiled) outcome.origin = KernelOrigin::compiled;
        require_stored(short_rows, job, cache, outcome);
      }
    }
    if (!outcome.failed && job.variant->paged_kv) {
      // Note: the kernels of calls over a paged cache (the manifest says the fleet makes them):
      // the sm80 family's (decoding steps, small pages) and, where the variant is served by the
      // sm90 kernel, that family's too (prefills).
      const VariantSpec& spec = job.variant->spec;
      const ParsedVariant parsed = parse_variant(spec);
      std::vector<codegen::FamilyRequest> families = {codegen::FamilyRequest::sm80};
      if (kernel.binary->config.family == codegen::KernelFamily::sm90) {
        families.push_back(codegen::FamilyRequest::sm90);
      }
      for (const codegen::FamilyRequest family : families) {
        if (outcome.failed) break;
        const VariantKernel paged = acquire_variant(spec, parsed, job.arch, cache, /*ptx=*/false,
                                                    family, codegen::Schedule::paged_kv);
        if (paged.origin == KernelOrigin::compiled) outcome.origin = KernelOrigin::compiled;
        require_stored(paged, job, cache, outcome);
      }
      if (!outcome.failed && families.size() > 1 && !codegen::schedule_tuning_requested()) {
        const VariantKernel split =
            acquire_variant(spec, parsed, job.arch, cache, /*ptx=*/false,
                            codegen::FamilyRequest::sm90, codegen::Schedule::paged_split_kv);
        if (split.origin == KernelOrigin::compiled) outcome.origin = KernelOrigin::compiled;
        require_stored(split, job, cache, outcome);
      }
    }
  } catch (const Error& e) {
    outcome.failed = true;
    outcome.status = e.status();
    outcome.error = e.what();
  } catch (const std::exception& e) {
    outcome.failed = true;
    outcome.status = Status::internal;
    outcome.error = e.what();
  }
  return outcome;
}

}  // namespace

std::vector<PrewarmJob> prewarm_jobs(const std::vector<NamedVariantSpec>& variants,
                                     const std::vector<std::string>& arches) {
  std::vector<PrewarmJob> jobs;
  for (const auto& variant : variants) {
    for (const auto& arch : arches) jobs.push_back({&variant, arch});
  }
  return jobs;
}

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

void require_storable(KernelCache& cache, const std::vector<std::string>& arches) {
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
}

std::vector<PrewarmOutcome> prewarm(const std::vector<PrewarmJob>& jobs, KernelCache& cache,
                                    int workers, const PrewarmCallback& on_done) {
  std::vector<PrewarmOutcome> outcomes(jobs.size());
  std::atomic<std::size_t> next{0};
  std::mutex callback_mutex;
  const auto work = [&](std::size_t /*worker*/) {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      outcomes[i] = run_job(jobs[i], cache);
      if (on_done) {
        const std::lock_guard lock(callback_mutex);
        on_done(i, outcomes[i]);
      }
    }
  };
  const int count = std::clamp(workers, 1, std::max(1, static_cast<int>(jobs.size())));
  run_workers(count, work);
  return outcomes;
}

}  // namespace attnjit
