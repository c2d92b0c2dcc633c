/* attnjit_prewarm from C: a one-kernel manifest for two arches (NVRTC compiles for real), the
 * progress callback, the per-kernel results, a second run served by the disk, a kernel that
 * fails, and the bad-input statuses.
 * Usage: test_capi_prewarm CACHE_DIR DATA_DIR (CACHE_DIR is emptied first). */
#include <stdio.h>
#include <string.h>

#include "attnjit/attnjit.h"
#include "check.h"

static const char* cache_dir = NULL;
static char one_kernel[4096];
static char one_failing[4096];

typedef struct progress_log {
  size_t calls;
  size_t last_done;
  size_t total;
  int saw_sm_90;
} progress_log;

static void on_progress(void* user_data, size_t done, size_t total,
                        const attnjit_prewarm_result* result) {
  progress_log* log = (progress_log*)user_data;
  ++log->calls;
  log->last_done = done;
  log->total = total;
  log->saw_sm_90 = log->saw_sm_90 || (result != NULL && strcmp(result->arch, "sm_90") == 0);
}

static void prewarm_options(attnjit_prewarm_options* options, const char* manifest,
                            const char* const* arches, size_t num_arches) {
  attnjit_prewarm_options_init(options);
  options->manifest_path = manifest;
  options->arches = arches;
  options->num_arches = num_arches;
  options->cache_dir = cache_dir;
  options->jobs = 2;
}

static void test_compiles_then_finds_on_disk(void) {
  /* sm_90 twice: compiled once. */
  const char* arches[] = {"sm_80", "sm_90", "sm_90"};
  attnjit_prewarm_options options;
  prewarm_options(&options, one_kernel, arches, 3);
  progress_log log = {0, 0, 0, 0};
  options.progress = on_progress;
  options.user_data = &log;
  attnjit_prewarm_report* report = NULL;
  CHECK(attnjit_prewarm(&report, &options) == ATTNJIT_OK);
  CHECK(attnjit_prewarm_report_count(report) == 2);
  CHECK(attnjit_prewarm_report_failures(report) == 0);
  CHECK(log.calls == 2 && log.last_done == 2 && log.total == 2 && log.saw_sm_90);
  for (size_t i = 0; i < attnjit_prewarm_report_count(report); ++i) {
    const attnjit_prewarm_result* result = attnjit_prewarm_report_result(report, i);
    CHECK(result != NULL);
    if (result == NULL) continue;
    CHECK(strcmp(result->name, "causal") == 0);
    CHECK(result->dtype == ATTNJIT_DTYPE_BF16);
    CHECK(result->head_dim == 64);
    CHECK(strcmp(result->arch, i == 0 ? "sm_80" : "sm_90") == 0);
    CHECK(result->status == ATTNJIT_OK);
    CHECK(result->origin == ATTNJIT_ORIGIN_COMPILED);
    CHECK(result->error == NULL);
    CHECK(result->not_stored == 0);
  }
  CHECK(attnjit_prewarm_report_result(report, 2) == NULL);
  attnjit_prewarm_report_destroy(report);

  /* A new call (a new process's view): both come from the disk. */
  options.progress = NULL;
  CHECK(attnjit_prewarm(&report, &options) == ATTNJIT_OK);
  CHECK(attnjit_prewarm_report_count(report) == 2);
  for (size_t i = 0; i < attnjit_prewarm_report_count(report); ++i) {
    const attnjit_prewarm_result* result = attnjit_prewarm_report_result(report, i);
    CHECK(result != NULL && result->origin == ATTNJIT_ORIGIN_DISK);
  }
  attnjit_prewarm_report_destroy(report);
}

static void test_failed_kernel_is_a_result(void) {
  const char* arches[] = {"sm_80"};
  attnjit_prewarm_options options;
  prewarm_options(&options, one_failing, arches, 1);
  attnjit_prewarm_report* report = NULL;
  CHECK(attnjit_prewarm(&report, &options) == ATTNJIT_OK);
  CHECK(attnjit_prewarm_report_count(report) == 1);
  CHECK(attnjit_prewarm_report_failures(report) == 1);
  const attnjit_prewarm_result* result = attnjit_prewarm_report_result(report, 0);
  CHECK(result != NULL && result->status == ATTNJIT_ERROR_UNSUPPORTED);
  CHECK(result != NULL && contains(result->error, "48"));
  CHECK(result != NULL && result->not_stored == 0); /* never compiled */
  CHECK(result != NULL && strcmp(result->name, "odd_head_dim") == 0 && result->head_dim == 48);
  attnjit_prewarm_report_destroy(report);
}

static void test_bad_input(void) {
  const char* arches[] = {"sm_80"};
  attnjit_prewarm_options options;
  prewarm_options(&options, one_kernel, arches, 1);
  attnjit_prewarm_report* report = NULL;
  CHECK(attnjit_prewarm(NULL, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_prewarm(&report, NULL) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  options.version = 0;
  CHECK(attnjit_prewarm(&report, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  options.version = ATTNJIT_PREWARM_OPTIONS_VERSION;

  options.num_arches = 0;
  CHECK(attnjit_prewarm(&report, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(attnjit_last_error(), "sm_80"));
  const char* unknown[] = {"sm_80", "compute_90"};
  options.arches = unknown;
  options.num_arches = 2;
  CHECK(attnjit_prewarm(&report, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  const char* old[] = {"sm_75"};
  options.arches = old;
  options.num_arches = 1;
  CHECK(attnjit_prewarm(&report, &options) == ATTNJIT_ERROR_UNSUPPORTED);
  const char* null_arch[] = {NULL};
  options.arches = null_arch;
  CHECK(attnjit_prewarm(&report, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  options.arches = arches;

  options.jobs = -1;
  CHECK(attnjit_prewarm(&report, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  options.jobs = 0;

  options.manifest_path = "/nonexistent/manifest.json";
  CHECK(attnjit_prewarm(&report, &options) == ATTNJIT_ERROR_IO);
  options.manifest_path = cache_dir; /* a directory, not a manifest */
  CHECK(attnjit_prewarm(&report, &options) != ATTNJIT_OK);
  CHECK(report == NULL);

  /* A cache root that cannot hold kernels fails before anything is compiled. */
  options.manifest_path = one_kernel;
  options.cache_dir = one_kernel; /* a file */
  CHECK(attnjit_prewarm(&report, &options) != ATTNJIT_OK);
  CHECK(report == NULL);

  CHECK(attnjit_prewarm_report_count(NULL) == 0);
  CHECK(attnjit_prewarm_report_failures(NULL) == 0);
  CHECK(attnjit_prewarm_report_result(NULL, 0) == NULL);
  attnjit_prewarm_report_destroy(NULL);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s CACHE_DIR DATA_DIR\n", argv[0]);
    return 2;
  }
  cache_dir = argv[1];
  snprintf(one_kernel, sizeof one_kernel, "%s/one_kernel.json", argv[2]);
  snprintf(one_failing, sizeof one_failing, "%s/one_failing.json", argv[2]);
  attnjit_cache_clear_options clear;
  attnjit_cache_clear_options_init(&clear);
  clear.cache_dir = cache_dir;
  CHECK(attnjit_cache_clear(NULL, &clear) == ATTNJIT_OK);
  test_bad_input();
  test_compiles_then_finds_on_disk();
  test_failed_kernel_is_a_result();
  CHECK(attnjit_cache_clear(NULL, &clear) == ATTNJIT_OK);
  return check_summary();
}
