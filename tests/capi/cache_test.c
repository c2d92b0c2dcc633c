/* The kernel cache from C: attnjit_cache_path, attnjit_cache_list_create, attnjit_cache_verify
 * and attnjit_cache_clear on a cache that attnjit_prewarm fills with one sm_80 kernel.
 * Usage: test_capi_cache CACHE_DIR DATA_DIR (CACHE_DIR is emptied first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnjit/attnjit.h"
#include "check.h"

static const char* cache_dir = NULL;

static void clear_all(void) {
  attnjit_cache_clear_options options;
  attnjit_cache_clear_options_init(&options);
  options.cache_dir = cache_dir;
  CHECK(attnjit_cache_clear(NULL, &options) == ATTNJIT_OK);
}

static void fill(const char* data_dir) {
  char manifest[4096];
  snprintf(manifest, sizeof manifest, "%s/one_kernel.json", data_dir);
  const char* arches[] = {"sm_80"};
  attnjit_prewarm_options options;
  attnjit_prewarm_options_init(&options);
  options.manifest_path = manifest;
  options.arches = arches;
  options.num_arches = 1;
  options.cache_dir = cache_dir;
  attnjit_prewarm_report* report = NULL;
  CHECK(attnjit_prewarm(&report, &options) == ATTNJIT_OK);
  CHECK(attnjit_prewarm_report_failures(report) == 0);
  attnjit_prewarm_report_destroy(report);
}

static void test_path(void) {
  size_t length = 0;
  char buffer[4096];
  CHECK(attnjit_cache_path(NULL, 0, &length, cache_dir) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(length == strlen(cache_dir));
  CHECK(attnjit_cache_path(buffer, sizeof buffer, &length, cache_dir) == ATTNJIT_OK);
  CHECK(strcmp(buffer, cache_dir) == 0);
  /* Exactly one byte short: nothing is written. */
  memset(buffer, 'x', sizeof buffer);
  CHECK(attnjit_cache_path(buffer, strlen(cache_dir), &length, cache_dir) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(buffer[0] == 'x');
  CHECK(attnjit_cache_path(buffer, strlen(cache_dir) + 1, &length, cache_dir) == ATTNJIT_OK);
  CHECK(strcmp(buffer, cache_dir) == 0);
  CHECK(attnjit_cache_path(buffer, sizeof buffer, NULL, cache_dir) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  /* NULL: the default, which ATTNJIT_CACHE_DIR sets (ctest gives it). */
  CHECK(attnjit_cache_path(buffer, sizeof buffer, &length, NULL) == ATTNJIT_OK);
  CHECK(getenv("ATTNJIT_CACHE_DIR") != NULL && strcmp(buffer, getenv("ATTNJIT_CACHE_DIR")) == 0);
}

static attnjit_cache_list* list_arch(const char* arch) {
  attnjit_cache_list_options options;
  attnjit_cache_list_options_init(&options);
  options.cache_dir = cache_dir;
  options.arch = arch;
  attnjit_cache_list* list = NULL;
  CHECK(attnjit_cache_list_create(&list, &options) == ATTNJIT_OK);
  return list;
}

static void test_list(void) {
  attnjit_cache_list* list = list_arch(NULL);
  CHECK(attnjit_cache_list_count(list) == 1);
  const attnjit_cache_entry* entry = attnjit_cache_list_entry(list, 0);
  CHECK(entry != NULL);
  if (entry != NULL) {
    CHECK(strcmp(entry->arch, "sm_80") == 0);
    CHECK(strncmp(entry->name, "bf16-d64-", 9) == 0);
    CHECK(contains(entry->name, entry->key));
    CHECK(contains(entry->binary_path, entry->name));
    CHECK(contains(entry->sidecar_path, ".json"));
    CHECK(contains(entry->summary, "causal"));
    CHECK(entry->size_bytes > 0);
    CHECK(entry->age_seconds >= 0 && entry->age_seconds < 3600);
    CHECK(entry->problem == NULL);
    CHECK(strlen(entry->cuda_version) > 0);
  }
  CHECK(attnjit_cache_list_entry(list, 1) == NULL);
  attnjit_cache_list_destroy(list);

  list = list_arch("sm_90");
  CHECK(attnjit_cache_list_count(list) == 0);
  attnjit_cache_list_destroy(list);
}

static void test_list_bad_input(void) {
  attnjit_cache_list_options options;
  attnjit_cache_list_options_init(&options);
  options.cache_dir = cache_dir;
  attnjit_cache_list* list = NULL;
  CHECK(attnjit_cache_list_create(NULL, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  options.arch = "gfx90a";
  CHECK(attnjit_cache_list_create(&list, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(list == NULL);
  CHECK(contains(attnjit_last_error(), "unknown arch"));
  CHECK(attnjit_cache_verify(&list, NULL, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  options.arch = NULL;
  options.version = 0;
  CHECK(attnjit_cache_list_create(&list, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_cache_verify(&list, NULL, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_cache_verify(NULL, NULL, NULL) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_cache_list_count(NULL) == 0);
  CHECK(attnjit_cache_list_entry(NULL, 0) == NULL);
  attnjit_cache_list_destroy(NULL);
}

static size_t verify(attnjit_cache_list** list) {
  attnjit_cache_list_options options;
  attnjit_cache_list_options_init(&options);
  options.cache_dir = cache_dir;
  size_t bad = 99;
  CHECK(attnjit_cache_verify(list, &bad, &options) == ATTNJIT_OK);
  return bad;
}

/* Flips the first byte of the file: same size, wrong checksum. */
static int corrupt(const char* path) {
  FILE* file = fopen(path, "r+b");
  if (file == NULL) return 0;
  const int first = fgetc(file);
  const int ok = first != EOF && fseek(file, 0, SEEK_SET) == 0 && fputc(first ^ 0xFF, file) != EOF;
  return fclose(file) == 0 && ok;
}

static void test_verify(void) {
  attnjit_cache_list* list = NULL;
  CHECK(verify(&list) == 0);
  CHECK(attnjit_cache_list_count(list) == 1);
  const attnjit_cache_entry* entry = attnjit_cache_list_entry(list, 0);
  CHECK(entry != NULL && entry->problem == NULL);
  CHECK(entry != NULL && corrupt(entry->binary_path));
  attnjit_cache_list_destroy(list);

  CHECK(verify(&list) == 1);
  CHECK(attnjit_cache_list_count(list) == 1);
  entry = attnjit_cache_list_entry(list, 0);
  CHECK(entry != NULL && entry->problem != NULL && strlen(entry->problem) > 0);
  attnjit_cache_list_destroy(list);
}

static void test_clear_filters(void) {
  attnjit_cache_clear_options options;
  attnjit_cache_clear_options_init(&options);
  CHECK(options.older_than_seconds < 0 && options.max_bytes < 0);
  options.cache_dir = cache_dir;
  attnjit_cache_clear_result result;

  options.older_than_seconds = 3600; /* the entry is seconds old: kept */
  CHECK(attnjit_cache_clear(&result, &options) == ATTNJIT_OK);
  CHECK(result.entries == 0);
  options.older_than_seconds = -1;

  options.arch = "sm_90"; /* another arch: kept */
  CHECK(attnjit_cache_clear(&result, &options) == ATTNJIT_OK);
  CHECK(result.entries == 0);
  options.arch = NULL;

  attnjit_cache_list* list = list_arch(NULL);
  const attnjit_cache_entry* entry = attnjit_cache_list_entry(list, 0);
  options.max_bytes = entry != NULL ? (int64_t)entry->size_bytes : 0; /* fits: kept */
  attnjit_cache_list_destroy(list);
  CHECK(attnjit_cache_clear(&result, &options) == ATTNJIT_OK);
  CHECK(result.entries == 0);

  options.max_bytes = 0; /* removed */
  CHECK(attnjit_cache_clear(&result, &options) == ATTNJIT_OK);
  CHECK(result.entries == 1 && result.files >= 2 && result.bytes > 0);
  list = list_arch(NULL);
  CHECK(attnjit_cache_list_count(list) == 0);
  attnjit_cache_list_destroy(list);
}

static void test_clear_bad_input(void) {
  attnjit_cache_clear_options options;
  attnjit_cache_clear_options_init(&options);
  options.cache_dir = cache_dir;
  options.arch = "sm_8";
  attnjit_cache_clear_result result;
  CHECK(attnjit_cache_clear(&result, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  options.arch = "sm_75";
  CHECK(attnjit_cache_clear(&result, &options) == ATTNJIT_ERROR_UNSUPPORTED);
  options.arch = NULL;
  options.version = 2;
  CHECK(attnjit_cache_clear(&result, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s CACHE_DIR DATA_DIR\n", argv[0]);
    return 2;
  }
  cache_dir = argv[1];
  clear_all();
  test_path();
  fill(argv[2]);
  test_list();
  test_list_bad_input();
  test_verify();
  test_clear_filters();
  test_clear_bad_input();
  clear_all();
  return check_summary();
}
