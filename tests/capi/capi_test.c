/* The C API used from C: the CPU backend end to end, status codes and messages for bad input.
 * Exits 0 on success and prints "N passed, M failed". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnjit/attnjit.h"
#include "check.h"

static float uniform(unsigned* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)((*state >> 8) & 0xFFFF) / 65536.0f * 2.0f - 1.0f;
}

/* Sliding-window causal attention in plain C, float32, [B, H, L, D]. */
static void naive_sliding_window(const float* q, const float* k, const float* v, float* out,
                                 float* lse, int heads, int len, int dim, int window) {
  const float scale = 1.0f / sqrtf((float)dim);
  for (int h = 0; h < heads; ++h) {
    for (int i = 0; i < len; ++i) {
      double scores[256];
      double max = -INFINITY;
      for (int j = 0; j < len; ++j) {
        scores[j] = -INFINITY;
        if (i >= j && i - j < window) {
          double s = 0;
          for (int d = 0; d < dim; ++d) {
            s += (double)q[(h * len + i) * dim + d] * (double)k[(h * len + j) * dim + d];
          }
          scores[j] = s * scale;
          if (scores[j] > max) max = scores[j];
        }
      }
      double sum = 0;
      for (int j = 0; j < len; ++j) sum += isinf(scores[j]) ? 0.0 : exp(scores[j] - max);
      for (int d = 0; d < dim; ++d) {
        double acc = 0;
        for (int j = 0; j < len; ++j) {
          if (!isinf(scores[j])) acc += exp(scores[j] - max) * (double)v[(h * len + j) * dim + d];
        }
        out[(h * len + i) * dim + d] = (float)(acc / sum);
      }
      lse[h * len + i] = (float)(max + log(sum));
    }
  }
}

static void test_versions(void) {
  CHECK(attnjit_version_number() == ATTNJIT_VERSION_NUMBER);
  CHECK(strcmp(attnjit_version(), "0.1.0") == 0);
  CHECK(strcmp(attnjit_status_string(ATTNJIT_ERROR_PARSE), "expression error") == 0);
  CHECK(attnjit_last_error() != NULL);
}

static void test_forward_matches_naive(void) {
  enum { HEADS = 2, LEN = 37, DIM = 32, WINDOW = 5 };
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = ATTNJIT_BACKEND_CPU;
  attnjit_runtime* runtime = NULL;
  CHECK(attnjit_runtime_create(&runtime, &options) == ATTNJIT_OK);
  CHECK(attnjit_runtime_backend(runtime) == ATTNJIT_BACKEND_CPU);

  attnjit_param_decl params[] = {{"W", ATTNJIT_PARAM_INT}};
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  desc.params = params;
  desc.num_params = 1;
  desc.dtype = ATTNJIT_DTYPE_FP32;
  desc.head_dim = DIM;
  attnjit_variant* variant = NULL;
  CHECK(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_OK);
  CHECK(attnjit_variant_prepare(variant) == ATTNJIT_OK);

  const size_t n = (size_t)HEADS * LEN * DIM;
  float* q = malloc(n * sizeof(float));
  float* k = malloc(n * sizeof(float));
  float* v = malloc(n * sizeof(float));
  float* out = malloc(n * sizeof(float));
  float* expected = malloc(n * sizeof(float));
  float lse[HEADS * LEN], expected_lse[HEADS * LEN];
  unsigned seed = 12345u;
  for (size_t i = 0; i < n; ++i) {
    q[i] = uniform(&seed);
    k[i] = uniform(&seed);
    v[i] = uniform(&seed);
    out[i] = NAN;
  }
  naive_sliding_window(q, k, v, expected, expected_lse, HEADS, LEN, DIM, WINDOW);

  attnjit_scalar values[1];
  values[0].i = WINDOW;
  attnjit_forward_args args;
  attnjit_forward_args_init(&args);
  args.q = q;
  args.k = k;
  args.v = v;
  args.out = out;
  args.lse = lse;
  args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_FP32;
  args.num_heads_q = args.num_heads_kv = HEADS;
  args.q_len = args.kv_len = LEN;
  args.params = values;
  args.num_params = 1;
  CHECK(attnjit_forward(variant, &args) == ATTNJIT_OK);

  double max_err = 0;
  for (size_t i = 0; i < n; ++i) {
    const double err = fabs((double)out[i] - (double)expected[i]);
    if (!(err <= max_err)) max_err = err; /* NaN-safe: a NaN makes max_err NaN */
  }
  for (int i = 0; i < HEADS * LEN; ++i) {
    const double err = fabs((double)lse[i] - (double)expected_lse[i]);
    if (!(err <= max_err)) max_err = err;
  }
  CHECK(max_err < 1e-4);

  /* Wrong number of parameter values. */
  args.num_params = 0;
  CHECK(attnjit_forward(variant, &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(attnjit_last_error(), "parameter") != NULL);
  args.num_params = 1;
  /* Null query. */
  args.q = NULL;
  CHECK(attnjit_forward(variant, &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  args.q = q;
  /* Mismatched dtypes. */
  args.k_dtype = ATTNJIT_DTYPE_BF16;
  CHECK(attnjit_forward(variant, &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  args.k_dtype = ATTNJIT_DTYPE_FP32;
  /* Uninitialised struct version. */
  args.version = 0;
  CHECK(attnjit_forward(variant, &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(attnjit_last_error(), "attnjit_forward_args_init") != NULL);

  free(q);
  free(k);
  free(v);
  free(out);
  free(expected);
  attnjit_variant_destroy(variant);
  attnjit_runtime_destroy(runtime);
}

static void test_bad_expressions(void) {
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = ATTNJIT_BACKEND_CPU;
  attnjit_runtime* runtime = NULL;
  CHECK(attnjit_runtime_create(&runtime, &options) == ATTNJIT_OK);

  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = "q_idx >= kv_idz";
  attnjit_variant* variant = (attnjit_variant*)0x1;
  CHECK(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_ERROR_PARSE);
  CHECK(variant == NULL);
  CHECK(strstr(attnjit_last_error(), "col 10") != NULL);
  CHECK(strstr(attnjit_last_error(), "kv_idx") != NULL);
  CHECK(strchr(attnjit_last_error(), '^') != NULL);

  desc.mask = "score > 0";
  CHECK(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_ERROR_PARSE);

  desc.mask = NULL;
  desc.score = "cap * tanh(score / cap)"; /* cap not declared */
  CHECK(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_ERROR_PARSE);

  CHECK(attnjit_variant_create(NULL, runtime, &desc) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_variant_create(&variant, NULL, &desc) == ATTNJIT_ERROR_INVALID_ARGUMENT);

  /* A success clears the message. */
  desc.score = NULL;
  CHECK(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_OK);
  CHECK(strcmp(attnjit_last_error(), "") == 0);
  attnjit_variant_destroy(variant);

  attnjit_variant_destroy(NULL);
  attnjit_runtime_destroy(runtime);
  attnjit_runtime_destroy(NULL);
}

static void test_runtime_options(void) {
  attnjit_runtime* runtime = NULL;
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.version = 99;
  CHECK(attnjit_runtime_create(&runtime, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(runtime == NULL);
  attnjit_runtime_options_init(&options);
  options.backend = (attnjit_backend)42;
  CHECK(attnjit_runtime_create(&runtime, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_runtime_create(NULL, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
}

/* C lets a caller store any int in an enum field; each is refused with a status, not used. */
static void test_out_of_range_enums(void) {
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = ATTNJIT_BACKEND_CPU;
  options.log_level = (attnjit_log_level)77;
  attnjit_runtime* runtime = NULL;
  CHECK(attnjit_runtime_create(&runtime, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  options.log_level = ATTNJIT_LOG_DEFAULT;
  CHECK(attnjit_runtime_create(&runtime, &options) == ATTNJIT_OK);

  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.head_dim = 16;
  desc.dtype = (attnjit_dtype)-5;
  attnjit_variant* variant = NULL;
  CHECK(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(attnjit_last_error(), "unknown dtype -5") != NULL);
  desc.dtype = ATTNJIT_DTYPE_FP32;
  attnjit_param_decl param = {"W", (attnjit_param_type)9};
  desc.params = &param;
  desc.num_params = 1;
  CHECK(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  attnjit_tensor_decl tensor = {"doc", (attnjit_tensor_type)1000, 1};
  desc.num_params = 0;
  desc.tensors = &tensor;
  desc.num_tensors = 1;
  CHECK(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  desc.num_tensors = 0;
  CHECK(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_OK);

  float data[16] = {0};
  attnjit_forward_args args;
  attnjit_forward_args_init(&args);
  args.q = args.k = args.v = args.out = data;
  args.q_len = args.kv_len = 1;
  args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_FP32;
  args.layout = (attnjit_layout)3;
  CHECK(attnjit_forward(variant, &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(attnjit_last_error(), "unknown layout 3") != NULL);
  args.layout = ATTNJIT_LAYOUT_BHLD;
  args.k_dtype = (attnjit_dtype)12345;
  CHECK(attnjit_forward(variant, &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  args.k_dtype = ATTNJIT_DTYPE_FP32;
  CHECK(attnjit_forward(variant, &args) == ATTNJIT_OK);

  CHECK(strcmp(attnjit_status_string((attnjit_status)-1), "unknown status") == 0);
  CHECK(strcmp(attnjit_status_string((attnjit_status)4096), "unknown status") == 0);
  attnjit_variant_destroy(variant);
  attnjit_runtime_destroy(runtime);
}

int main(void) {
  test_versions();
  test_out_of_range_enums();
  test_forward_matches_naive();
  test_bad_expressions();
  test_runtime_options();
  return check_summary();
}
