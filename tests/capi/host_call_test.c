/* attnjit_variant_tile_census, attnjit_variant_tile_map, attnjit_variant_reference and
 * attnjit_variant_launch_plan from C, on the CPU backend: exact tile counts and tile maps for
 * masks whose tiles are known, the tiles of a GPU arch's kernel, the reference's exact answers,
 * the CPU backend's plan, and their bad-input statuses. Exits 0 on success. (The GPU kernels'
 * plans are tests/dispatch's, on the fake device.) */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "attnjit/attnjit.h"
#include "check.h"

enum { kLen = 128, kHeads = 2, kDim = 64 };

static attnjit_runtime* runtime = NULL;

/* Host buffers for one [1, kHeads, kLen, kDim] fp32 problem. */
static float q[kHeads * kLen * kDim], k[kHeads * kLen * kDim], v[kHeads * kLen * kDim];
static float out[kHeads * kLen * kDim], lse[kHeads * kLen];

static attnjit_variant* make_variant(const char* mask, const attnjit_tensor_decl* tensors,
                                     int num_tensors) {
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = mask;
  desc.tensors = tensors;
  desc.num_tensors = num_tensors;
  desc.dtype = ATTNJIT_DTYPE_FP32;
  desc.head_dim = kDim;
  attnjit_variant* variant = NULL;
  CHECK(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_OK);
  return variant;
}

static attnjit_forward_args host_args(void) {
  attnjit_forward_args args;
  attnjit_forward_args_init(&args);
  args.q = q;
  args.k = k;
  args.v = v;
  args.out = out;
  args.lse = lse;
  args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_FP32;
  args.num_heads_q = args.num_heads_kv = kHeads;
  args.q_len = args.kv_len = kLen;
  return args;
}

static void test_causal_census_on_the_cpu_tiles(void) {
  attnjit_variant* causal = make_variant("q_idx >= kv_idx", NULL, 0);
  const attnjit_forward_args args = host_args();
  attnjit_tile_census census;
  memset(&census, 0, sizeof census);
  CHECK(attnjit_variant_tile_census(&census, causal, &args, NULL) == ATTNJIT_OK);
  /* The CPU reference's 64 x 64 tiles: per head, 2 x 2 tiles, one above the diagonal (empty),
   * two on it (partial), one below (full). */
  CHECK(census.tile_q == 64 && census.tile_kv == 64);
  CHECK(census.tiles == 2 * 4);
  CHECK(census.empty == 2 * 1);
  CHECK(census.partial == 2 * 2);
  CHECK(census.full == 2 * 1);
  CHECK(census.kept_pairs == 2 * (kLen * (kLen + 1) / 2));
  CHECK(census.total_pairs == 2 * kLen * kLen);
  attnjit_variant_destroy(causal);
}

/* A causal bf16 variant: GPU kernels exist for it, so its census can use a GPU arch's tiles. */
static attnjit_variant* make_bf16_causal(void) {
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = "q_idx >= kv_idx";
  desc.head_dim = kDim;
  attnjit_variant* bf16 = NULL;
  CHECK(attnjit_variant_create(&bf16, runtime, &desc) == ATTNJIT_OK);
  return bf16;
}

static void test_census_for_an_arch_uses_its_kernel_tiles(void) {
  attnjit_variant* bf16 = make_bf16_causal();
  attnjit_inspect_options inspect;
  attnjit_inspect_options_init(&inspect);
  inspect.arch = "sm_80";
  inspect.parts = 0;
  attnjit_variant_info* info = NULL;
  CHECK(attnjit_variant_inspect(&info, bf16, &inspect) == ATTNJIT_OK);

  attnjit_forward_args args = host_args();
  args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_BF16;
  attnjit_tile_census_options options;
  attnjit_tile_census_options_init(&options);
  CHECK(options.version == ATTNJIT_TILE_CENSUS_OPTIONS_VERSION && options.arch == NULL);
  options.arch = "sm_80";
  attnjit_tile_census census;
  CHECK(attnjit_variant_tile_census(&census, bf16, &args, &options) == ATTNJIT_OK);
  if (info != NULL) {
    CHECK(census.tile_q == info->block_m && census.tile_kv == info->block_n);
    const int64_t rows = (kLen + info->block_m - 1) / info->block_m;
    const int64_t cols = (kLen + info->block_n - 1) / info->block_n;
    CHECK(census.tiles == kHeads * rows * cols);
  }
  CHECK(census.empty + census.partial + census.full == census.tiles);
  CHECK(census.kept_pairs == 2 * (kLen * (kLen + 1) / 2));

  /* 20 queries: the decoding entry runs the call, in its own tiles. A variant created under
   * ATTNJIT_DECODE_ENTRY=off counts the forward entry's; the switch is read at creation, so the
   * first variant keeps its own. */
  args.q_len = 20;
  CHECK(attnjit_variant_tile_census(&census, bf16, &args, &options) == ATTNJIT_OK);
  if (info != NULL) {
    CHECK(info->has_decode_entry == 1);
    CHECK(census.tile_q == info->decode_block_m && census.tile_kv == info->decode_block_n);
    setenv("ATTNJIT_DECODE_ENTRY", "off", 1);
    attnjit_variant* off = make_bf16_causal();
    CHECK(attnjit_variant_tile_census(&census, off, &args, &options) == ATTNJIT_OK);
    CHECK(census.tile_q == info->block_m && census.tile_kv == info->block_n);
    CHECK(attnjit_variant_tile_census(&census, bf16, &args, &options) == ATTNJIT_OK);
    CHECK(census.tile_q == info->decode_block_m);
    unsetenv("ATTNJIT_DECODE_ENTRY");
    attnjit_variant_destroy(off);
  }
  args.q_len = kLen;

  options.arch = "sm_7";
  CHECK(attnjit_variant_tile_census(&census, bf16, &args, &options) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(attnjit_last_error(), "sm_7"));
  attnjit_variant_info_destroy(info);
  attnjit_variant_destroy(bf16);
}

/* The census follows the kernel family: on sm_90a with ATTNJIT_KERNEL_FAMILY=sm90 the tiles are
 * the Hopper kernel's (keys 128 at a time), not the sm80 kernel's. */
static void test_census_for_sm90a_uses_the_family_chosen(void) {
  attnjit_variant* bf16 = make_bf16_causal();
  attnjit_forward_args args = host_args();
  args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_BF16;
  attnjit_tile_census_options options;
  attnjit_tile_census_options_init(&options);
  options.arch = "sm_90a";
  attnjit_inspect_options inspect;
  attnjit_inspect_options_init(&inspect);
  inspect.arch = "sm_90a";
  inspect.parts = 0;
  const char* families[] = {"sm80", "sm90"};
  int tile_kv[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    setenv("ATTNJIT_KERNEL_FAMILY", families[i], 1);
    attnjit_variant_info* info = NULL;
    CHECK(attnjit_variant_inspect(&info, bf16, &inspect) == ATTNJIT_OK);
    attnjit_tile_census census;
    CHECK(attnjit_variant_tile_census(&census, bf16, &args, &options) == ATTNJIT_OK);
    if (info != NULL) {
      CHECK(strcmp(info->kernel_family, families[i]) == 0);
      CHECK(census.tile_q == info->block_m && census.tile_kv == info->block_n);
    }
    tile_kv[i] = census.tile_kv;
    CHECK(census.kept_pairs == 2 * (kLen * (kLen + 1) / 2));
    attnjit_variant_info_destroy(info);
  }
  unsetenv("ATTNJIT_KERNEL_FAMILY");
  CHECK(tile_kv[0] != tile_kv[1]);
  attnjit_variant_destroy(bf16);
}

/* A few queries of a GQA group on sm_90a: the sm90 split kernel packs the group's heads into its
 * 128-row blocks of whole queries, so the census's query tiles are 128 / g queries of each head
 * (16 for groups of 8, 18 for groups of 7); with ATTNJIT_PACK_GQA=off (read when a variant is
 * created) the step has the sm80 decoding entry's 32-row tiles of one head. */
static void test_census_of_a_packed_step_on_sm90a(void) {
  setenv("ATTNJIT_KERNEL_FAMILY", "sm90", 1);
  attnjit_tile_census_options options;
  attnjit_tile_census_options_init(&options);
  options.arch = "sm_90a";
  attnjit_forward_args args = host_args();
  args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_BF16;
  args.q_len = 24;
  args.num_heads_kv = 1;
  const int groups[] = {8, 7};
  const int tiles_q[] = {16, 18};
  attnjit_tile_census census;
  for (int i = 0; i < 2; ++i) {
    attnjit_variant* bf16 = make_bf16_causal();
    args.num_heads_q = groups[i];
    CHECK(attnjit_variant_tile_census(&census, bf16, &args, &options) == ATTNJIT_OK);
    CHECK(census.tile_q == tiles_q[i]);
    const int64_t cols = (kLen + census.tile_kv - 1) / census.tile_kv;
    CHECK(census.tiles == groups[i] * ((24 + tiles_q[i] - 1) / tiles_q[i]) * cols);
    CHECK(census.kept_pairs == groups[i] * (24 * 25 / 2));
    attnjit_variant_destroy(bf16);
  }
  setenv("ATTNJIT_PACK_GQA", "off", 1);
  attnjit_variant* unpacked = make_bf16_causal();
  args.num_heads_q = 8;
  CHECK(attnjit_variant_tile_census(&census, unpacked, &args, &options) == ATTNJIT_OK);
  CHECK(census.tile_q == 32);
  unsetenv("ATTNJIT_PACK_GQA");
  unsetenv("ATTNJIT_KERNEL_FAMILY");
  attnjit_variant_destroy(unpacked);
}

static void test_census_reads_the_tensors_of_the_call(void) {
  const attnjit_tensor_decl doc_decl = {"doc", ATTNJIT_TENSOR_INT32, 1};
  attnjit_variant* document = make_variant("doc[q_idx] == doc[kv_idx]", &doc_decl, 1);
  int32_t doc[kLen];
  for (int i = 0; i < kLen; ++i) doc[i] = i < 64 ? 0 : 1; /* two documents, one per tile */
  const attnjit_tensor_arg doc_arg = {doc, {kLen, 1}};
  attnjit_forward_args args = host_args();
  args.tensors = &doc_arg;
  args.num_tensors = 1;
  attnjit_tile_census census;
  CHECK(attnjit_variant_tile_census(&census, document, &args, NULL) == ATTNJIT_OK);
  CHECK(census.tiles == 8 && census.empty == 4 && census.full == 4 && census.partial == 0);
  CHECK(census.kept_pairs == kHeads * 2 * 64 * 64);

  args.num_tensors = 0; /* the tensor the mask reads is missing */
  CHECK(attnjit_variant_tile_census(&census, document, &args, NULL) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  attnjit_variant_destroy(document);
}

/* Only the per-call tensors are read: q, k, v and out may be device pointers (here addresses
 * that must never be dereferenced). */
static void test_census_reads_no_attention_inputs(void) {
  attnjit_variant* causal = make_variant("q_idx >= kv_idx", NULL, 0);
  attnjit_forward_args args = host_args();
  args.q = args.k = args.v = (const void*)(uintptr_t)0x10000;
  args.out = (void*)(uintptr_t)0x4000000;
  args.lse = NULL;
  attnjit_tile_census census;
  CHECK(attnjit_variant_tile_census(&census, causal, &args, NULL) == ATTNJIT_OK);
  CHECK(census.kept_pairs == 2 * (kLen * (kLen + 1) / 2));
  attnjit_variant_destroy(causal);
}

static void test_census_bad_input(void) {
  attnjit_variant* causal = make_variant("q_idx >= kv_idx", NULL, 0);
  attnjit_forward_args args = host_args();
  attnjit_tile_census census;
  CHECK(attnjit_variant_tile_census(NULL, causal, &args, NULL) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_variant_tile_census(&census, NULL, &args, NULL) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_variant_tile_census(&census, causal, NULL, NULL) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  attnjit_tile_census_options options;
  attnjit_tile_census_options_init(&options);
  options.version = 99;
  CHECK(attnjit_variant_tile_census(&census, causal, &args, &options) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  args.q_len = 0;
  CHECK(attnjit_variant_tile_census(&census, causal, &args, NULL) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  attnjit_variant_destroy(causal);
}

/* Causal on the CPU's 64 x 64 tiles, 2 x 2 per head: the diagonal partial, the upper right
 * empty, the lower left full; a mask that differs by head gives each head its own map. */
static void test_tile_map_of_one_head(void) {
  attnjit_variant* mask = make_variant("h == 0 ? q_idx >= kv_idx : kv_idx < 64", NULL, 0);
  const attnjit_forward_args args = host_args();
  int rows = 0, cols = 0, tile_q = 0, tile_kv = 0;
  CHECK(attnjit_variant_tile_map(NULL, 0, &rows, &cols, &tile_q, &tile_kv, mask, &args, 0, 0,
                                 NULL) == ATTNJIT_OK);
  CHECK(rows == 2 && cols == 2 && tile_q == 64 && tile_kv == 64);
  unsigned char map[4] = {9, 9, 9, 9};
  CHECK(attnjit_variant_tile_map(map, sizeof map, &rows, &cols, NULL, NULL, mask, &args, 0, 0,
                                 NULL) == ATTNJIT_OK);
  CHECK(map[0] == ATTNJIT_TILE_PARTIAL && map[1] == ATTNJIT_TILE_EMPTY);
  CHECK(map[2] == ATTNJIT_TILE_FULL && map[3] == ATTNJIT_TILE_PARTIAL);
  CHECK(attnjit_variant_tile_map(map, sizeof map, &rows, &cols, NULL, NULL, mask, &args, 0, 1,
                                 NULL) == ATTNJIT_OK);
  CHECK(map[0] == ATTNJIT_TILE_FULL && map[1] == ATTNJIT_TILE_EMPTY);
  CHECK(map[2] == ATTNJIT_TILE_FULL && map[3] == ATTNJIT_TILE_EMPTY);
  attnjit_variant_destroy(mask);
}

static void test_tile_map_bad_input(void) {
  attnjit_variant* causal = make_variant("q_idx >= kv_idx", NULL, 0);
  const attnjit_forward_args args = host_args();
  unsigned char map[4] = {9, 9, 9, 9};
  int rows = 0, cols = 0;
  CHECK(attnjit_variant_tile_map(map, 3, &rows, &cols, NULL, NULL, causal, &args, 0, 0, NULL) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(attnjit_last_error(), "needs 4 (2 x 2 tiles)"));
  CHECK(rows == 2 && cols == 2 && map[0] == 9); /* the size is told, nothing else written */
  CHECK(attnjit_variant_tile_map(map, 4, &rows, &cols, NULL, NULL, causal, &args, 0, kHeads,
                                 NULL) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(attnjit_last_error(), "query heads 0..1"));
  CHECK(attnjit_variant_tile_map(map, 4, &rows, &cols, NULL, NULL, causal, &args, 1, 0, NULL) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_variant_tile_map(map, 4, NULL, &cols, NULL, NULL, causal, &args, 0, 0, NULL) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_variant_tile_map(map, 4, &rows, &cols, NULL, NULL, NULL, &args, 0, 0, NULL) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_variant_tile_map(map, 4, &rows, &cols, NULL, NULL, causal, NULL, 0, 0, NULL) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  attnjit_variant_destroy(causal);
}

static void fill_inputs(void) {
  unsigned state = 7;
  for (int i = 0; i < kHeads * kLen * kDim; ++i) {
    state = state * 1664525u + 1013904223u;
    q[i] = (float)((state >> 8) & 0xFF) / 256.0f - 0.5f;
    k[i] = (float)((state >> 16) & 0xFF) / 256.0f - 0.5f;
    v[i] = (float)((state >> 4) & 0xFF) / 256.0f - 0.5f;
  }
}

/* Every row keeps only key 0: its output is value row 0 and its lse is that one score. */
static void test_reference_when_one_key_is_kept(void) {
  attnjit_variant* first_key = make_variant("kv_idx == 0", NULL, 0);
  const attnjit_forward_args args = host_args();
  static double expected_out[kHeads * kLen * kDim], expected_lse[kHeads * kLen];
  CHECK(attnjit_variant_reference(first_key, &args, expected_out, expected_lse) == ATTNJIT_OK);
  const double scale = 1.0 / sqrt((double)kDim);
  int out_ok = 1, lse_ok = 1;
  for (int h = 0; h < kHeads; ++h) {
    const float* key0 = k + (size_t)h * kLen * kDim;
    const float* value0 = v + (size_t)h * kLen * kDim;
    for (int i = 0; i < kLen; ++i) {
      const float* query = q + ((size_t)h * kLen + i) * kDim;
      double score = 0.0;
      for (int d = 0; d < kDim; ++d) {
        score += (double)query[d] * key0[d];
        out_ok &= fabs(expected_out[((size_t)h * kLen + i) * kDim + d] - value0[d]) < 1e-12;
      }
      lse_ok &= fabs(expected_lse[h * kLen + i] - score * scale) < 1e-5;
    }
  }
  CHECK(out_ok);
  CHECK(lse_ok);
  CHECK(isnan(out[0])); /* args.out is not written */
  attnjit_variant_destroy(first_key);
}

static void test_reference_of_a_mask_that_keeps_nothing(void) {
  attnjit_variant* nothing = make_variant("false", NULL, 0);
  const attnjit_forward_args args = host_args();
  static double expected_out[kHeads * kLen * kDim], expected_lse[kHeads * kLen];
  CHECK(attnjit_variant_reference(nothing, &args, expected_out, NULL) == ATTNJIT_OK);
  CHECK(attnjit_variant_reference(nothing, &args, expected_out, expected_lse) == ATTNJIT_OK);
  CHECK(expected_out[0] == 0.0 && expected_out[kHeads * kLen * kDim - 1] == 0.0);
  CHECK(isinf(expected_lse[0]) && expected_lse[0] < 0);
  attnjit_variant_destroy(nothing);
}

static void test_reference_bad_input(void) {
  const attnjit_param_decl w_decl = {"W", ATTNJIT_PARAM_INT};
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = "q_idx - kv_idx < W";
  desc.params = &w_decl;
  desc.num_params = 1;
  desc.dtype = ATTNJIT_DTYPE_FP32;
  desc.head_dim = kDim;
  attnjit_variant* window = NULL;
  CHECK(attnjit_variant_create(&window, runtime, &desc) == ATTNJIT_OK);
  attnjit_forward_args args = host_args();
  static double expected_out[kHeads * kLen * kDim];
  CHECK(attnjit_variant_reference(window, &args, expected_out, NULL) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT); /* W has no value */
  CHECK(contains(attnjit_last_error(), "parameter"));
  const attnjit_scalar w = {.i = 8};
  args.params = &w;
  args.num_params = 1;
  CHECK(attnjit_variant_reference(window, &args, NULL, NULL) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_variant_reference(NULL, &args, expected_out, NULL) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  args.version = 0;
  CHECK(attnjit_variant_reference(window, &args, expected_out, NULL) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  attnjit_variant_destroy(window);
}

static void test_launch_plan_on_the_cpu(void) {
  attnjit_variant* causal = make_variant("q_idx >= kv_idx", NULL, 0);
  attnjit_forward_args args = host_args();
  attnjit_launch_plan plan;
  attnjit_launch_plan_init(&plan);
  CHECK(plan.version == ATTNJIT_LAUNCH_PLAN_VERSION);
  CHECK(strcmp(plan.kernel, "") == 0 && strcmp(plan.kernel_family, "") == 0);
  CHECK(attnjit_variant_launch_plan(&plan, causal, &args) == ATTNJIT_OK);
  CHECK(plan.backend == ATTNJIT_BACKEND_CPU);
  CHECK(strcmp(plan.kernel, "reference") == 0);
  CHECK(strcmp(plan.kernel_family, "") == 0 && strcmp(plan.entry, "") == 0);
  CHECK(contains(plan.reason, "CPU reference"));
  CHECK(plan.grid_x == 0 && plan.num_splits == 0);

  /* The whole reason: its length first, then into a buffer of exactly that length + 1. */
  size_t length = 0;
  CHECK(attnjit_variant_launch_reason(NULL, 0, &length, causal, &args) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(length == strlen(plan.reason));
  char whole[256];
  memset(whole, '#', sizeof(whole));
  CHECK(attnjit_variant_launch_reason(whole, length, &length, causal, &args) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(whole[0] == '#');
  CHECK(attnjit_variant_launch_reason(whole, length + 1, &length, causal, &args) == ATTNJIT_OK);
  CHECK(strcmp(whole, plan.reason) == 0);
  CHECK(attnjit_variant_launch_reason(whole, sizeof(whole), NULL, causal, &args) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(attnjit_last_error(), "length"));

  /* Bad input: a status, a message, and the caller's struct as it was. */
  attnjit_launch_plan kept;
  attnjit_launch_plan_init(&kept);
  args.q_dtype = ATTNJIT_DTYPE_BF16;
  CHECK(attnjit_variant_launch_plan(&kept, causal, &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(attnjit_last_error(), "float32"));
  CHECK(strcmp(kept.kernel, "") == 0);
  args = host_args();
  CHECK(attnjit_variant_launch_plan(NULL, causal, &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_variant_launch_plan(&kept, NULL, &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_variant_launch_plan(&kept, causal, NULL) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  kept.version = 0; /* a struct that never went through attnjit_launch_plan_init */
  CHECK(attnjit_variant_launch_plan(&kept, causal, &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(attnjit_last_error(), "attnjit_launch_plan"));
  attnjit_launch_plan_init(NULL); /* harmless */
  attnjit_variant_destroy(causal);
}

int main(void) {
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = ATTNJIT_BACKEND_CPU;
  CHECK(attnjit_runtime_create(&runtime, &options) == ATTNJIT_OK);
  fill_inputs();
  for (size_t i = 0; i < sizeof out / sizeof out[0]; ++i) out[i] = NAN;
  test_causal_census_on_the_cpu_tiles();
  test_census_for_an_arch_uses_its_kernel_tiles();
  test_census_for_sm90a_uses_the_family_chosen();
  test_census_of_a_packed_step_on_sm90a();
  test_census_reads_the_tensors_of_the_call();
  test_census_reads_no_attention_inputs();
  test_census_bad_input();
  test_tile_map_of_one_head();
  test_tile_map_bad_input();
  test_reference_when_one_key_is_kept();
  test_reference_of_a_mask_that_keeps_nothing();
  test_reference_bad_input();
  test_launch_plan_on_the_cpu();
  attnjit_runtime_destroy(runtime);
  return check_summary();
}
