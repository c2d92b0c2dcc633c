// Prewarming: compile a manifest's variants for a set of arches into the kernel cache, in
// parallel, so that the first call of a deployed job finds its kernels on disk. Shared by
// `attnjit prewarm` and attnjit_prewarm (the C API).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/manifest.hpp"

namespace attnjit {

struct PrewarmJob {
  const NamedVariantSpec* variant;  // owned by the caller; outlives the prewarm
  std::string arch;                 // validated
};

struct PrewarmOutcome {
  bool failed = false;
  bool not_stored = false;  // compiled, but the cache could not keep it: a failure too
  Status status = Status::ok;
  KernelOrigin origin = KernelOrigin::compiled;
  std::string error;  // empty unless failed
};

// One job per variant x arch, in that order.
std::vector<PrewarmJob> prewarm_jobs(const std::vector<NamedVariantSpec>& variants,
                                     const std::vector<std::string>& arches);

// Why kernels cannot be stored in `dir`, judged from its deepest existing ancestor without
// creating anything: that ancestor is not a directory, or this process may not write into it
// (permissions, a read-only filesystem). Empty when nothing there stands in the way.
std::string why_unwritable(const std::filesystem::path& dir);

// Prewarming exists to fill the cache: creates its root (private, checked) and throws
// Error(io) (or the store's status) when it, or any arch's directory, cannot hold kernels, so
// that nothing is compiled into memory only.
void require_storable(KernelCache& cache, const std::vector<std::string>& arches);

// Runs every job on `workers` workers (at least 1, at most one per job; the calling thread is one
// of them, and a thread the system refuses only means fewer: common/workers.hpp).
// `on_done(index, outcome)` is called as each job finishes, from the workers, one call at a time.
// Failures are outcomes, never exceptions.
using PrewarmCallback = std::function<void(std::size_t, const PrewarmOutcome&)>;
std::vector<PrewarmOutcome> prewarm(const std::vector<PrewarmJob>& jobs, KernelCache& cache,
                                    int workers, const PrewarmCallback& on_done = {});

}  // namespace attnjit
