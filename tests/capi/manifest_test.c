/* attnjit_manifest_* from C: the embedded standard manifest's variants, a manifest file, bad
 * ones. Usage: test_capi_manifest DATA_DIR. */
#include <stdio.h>
#include <string.h>

#include "attnjit/attnjit.h"
#include "check.h"

static const attnjit_manifest_variant* find(const attnjit_manifest* manifest, const char* name) {
  for (size_t i = 0; i < attnjit_manifest_count(manifest); ++i) {
    const attnjit_manifest_variant* variant = attnjit_manifest_variant_at(manifest, i);
    if (strcmp(variant->name, name) == 0) return variant;
  }
  return NULL;
}

static void test_standard_manifest(void) {
  attnjit_manifest* manifest = NULL;
  CHECK(attnjit_manifest_load(&manifest, NULL) == ATTNJIT_OK);
  CHECK(contains(attnjit_manifest_source(manifest), "standard"));
  CHECK(attnjit_manifest_count(manifest) >= 5);
  CHECK(attnjit_manifest_variant_at(manifest, attnjit_manifest_count(manifest)) == NULL);

  const attnjit_manifest_variant* causal = find(manifest, "causal");
  CHECK(causal != NULL);
  if (causal != NULL) {
    CHECK(strcmp(causal->mask, "q_idx >= kv_idx") == 0);
    CHECK(causal->num_params == 0 && causal->num_tensors == 0);
    CHECK(causal->num_dtypes >= 1 && causal->num_head_dims >= 1);
    CHECK(causal->head_dims[0] > 0);
    CHECK(strcmp(causal->example_json, "{}") == 0);
  }
  const attnjit_manifest_variant* window = find(manifest, "sliding_window");
  CHECK(window != NULL);
  if (window != NULL) {
    CHECK(window->num_params == 1 && strcmp(window->params[0].name, "W") == 0);
    CHECK(window->params[0].type == ATTNJIT_PARAM_INT);
    CHECK(contains(window->example_json, "\"W\""));
  }
  const attnjit_manifest_variant* document = find(manifest, "document");
  CHECK(document != NULL);
  if (document != NULL) {
    CHECK(document->num_tensors == 1 && document->tensors[0].rank == 1);
    CHECK(document->tensors[0].type == ATTNJIT_TENSOR_INT32);
  }
  attnjit_manifest_destroy(manifest);
}

static void test_manifest_file(const char* data_dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/one_kernel.json", data_dir);
  attnjit_manifest* manifest = NULL;
  CHECK(attnjit_manifest_load(&manifest, path) == ATTNJIT_OK);
  CHECK(attnjit_manifest_count(manifest) == 1);
  CHECK(strcmp(attnjit_manifest_source(manifest), path) == 0);
  const attnjit_manifest_variant* only = attnjit_manifest_variant_at(manifest, 0);
  CHECK(only != NULL && strcmp(only->name, "causal") == 0);
  CHECK(only != NULL && only->num_dtypes == 1 && only->dtypes[0] == ATTNJIT_DTYPE_BF16);
  CHECK(only != NULL && only->num_head_dims == 1 && only->head_dims[0] == 64);
  attnjit_manifest_destroy(manifest);
}

static void test_bad_manifests(const char* data_dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/no_such_manifest.json", data_dir);
  attnjit_manifest* manifest = NULL;
  CHECK(attnjit_manifest_load(&manifest, path) == ATTNJIT_ERROR_IO);
  CHECK(manifest == NULL);
  snprintf(path, sizeof path, "%s", data_dir); /* a directory */
  CHECK(attnjit_manifest_load(&manifest, path) != ATTNJIT_OK);
  CHECK(attnjit_manifest_load(NULL, NULL) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_manifest_count(NULL) == 0);
  CHECK(attnjit_manifest_variant_at(NULL, 0) == NULL);
  CHECK(strcmp(attnjit_manifest_source(NULL), "") == 0);
  attnjit_manifest_destroy(NULL);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  test_standard_manifest();
  test_manifest_file(argv[1]);
  test_bad_manifests(argv[1]);
  return check_summary();
}
