/* attnjit_variant_inspect from C: the configuration, cache entry, source, resources and PTX of
 * a variant for sm_80 (NVRTC compiles for real; no GPU needed), and its bad-input statuses.
 * Usage: test_capi_inspect CACHE_DIR (emptied first). */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnjit/attnjit.h"
#include "check.h"

static attnjit_runtime* runtime = NULL;
static attnjit_variant* variant = NULL;

static void create_variant(const char* cache_dir) {
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = ATTNJIT_BACKEND_CPU;
  options.cache_dir = cache_dir;
  CHECK(attnjit_runtime_create(&runtime, &options) == ATTNJIT_OK);
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = "kv_idx <= q_idx && (true)";
  desc.head_dim = 64;
  CHECK(attnjit_variant_create(&variant, runtime, &desc) == ATTNJIT_OK);
}

static void test_source_only_compiles_nothing(void) {
  attnjit_inspect_options options;
  attnjit_inspect_options_init(&options);
  CHECK(options.version == ATTNJIT_INSPECT_OPTIONS_VERSION);
  CHECK(options.parts == ATTNJIT_INSPECT_ALL);
  options.arch = "sm_80";
  options.parts = ATTNJIT_INSPECT_SOURCE;
  attnjit_variant_info* info = NULL;
  CHECK(attnjit_variant_inspect(&info, variant, &options) == ATTNJIT_OK);
  if (info == NULL) return;
  CHECK(strcmp(info->arch, "sm_80") == 0);
  CHECK(strcmp(info->kernel, "attnjit_fwd") == 0);
  CHECK(strcmp(info->canonical_mask, "(kv_idx <= q_idx)") == 0); /* "&& (true)" folded away */
  CHECK(info->mask_reads_tensors == 0);
  CHECK(info->block_m > 0 && info->block_n > 0 && info->num_warps > 0 && info->num_stages > 0);
  CHECK(info->dynamic_smem_bytes > 0);
  /* Head dim 64 on sm_80: the decoding entry, 32-row blocks of 2 warps. */
  CHECK(info->has_decode_entry == 1);
  CHECK(info->decode_block_m == 32 && info->decode_num_warps == 2);
  CHECK(info->decode_block_n > 0 && info->decode_num_stages >= 2);
  CHECK(info->decode_dynamic_smem_bytes > 0 && info->decode_blocks_per_sm >= 1);
  CHECK(info->decode_registers == 0);
  CHECK(contains(info->source, "attnjit_fwd_decode("));
  CHECK(info->has_merge_entry == 1); /* the sm80 kernel's module */
  CHECK(info->merge_registers == 0 && info->summary_registers == 0);
  CHECK(info->has_resources == 0 && info->registers == 0);
  CHECK(contains(info->source, "attnjit_fwd"));
  CHECK(info->ptx == NULL);
  CHECK(strlen(info->cache_key) >= 16);
  CHECK(contains(info->cache_path, "sm_80"));
  CHECK(contains(info->cache_path, info->cache_key));
  CHECK(contains(info->cache_path, "bf16-d64-"));
  CHECK(info->cached == 0);
  attnjit_variant_info_destroy(info);
}

static void test_all_parts_compile_cubin_and_ptx(void) {
  attnjit_inspect_options options;
  attnjit_inspect_options_init(&options);
  options.arch = "sm_80";
  attnjit_variant_info* info = NULL;
  CHECK(attnjit_variant_inspect(&info, variant, &options) == ATTNJIT_OK);
  if (info == NULL) return;
  CHECK(info->has_resources == 1);
  CHECK(info->registers > 0);
  CHECK(info->decode_registers > 0);
  CHECK(info->decode_spill_store_bytes == 0 && info->decode_spill_load_bytes == 0);
  /* The module's other entries: the tensor summary and the split-KV merge. */
  CHECK(info->summary_registers > 0);
  CHECK(info->summary_spill_store_bytes == 0 && info->summary_spill_load_bytes == 0);
  CHECK(info->summary_stack_frame_bytes == 0);
  CHECK(info->has_merge_entry == 1 && info->merge_registers > 0);
  CHECK(info->merge_spill_store_bytes == 0 && info->merge_spill_load_bytes == 0);
  CHECK(info->merge_stack_frame_bytes == 0);
  CHECK(info->cubin_bytes > 0);
  CHECK(info->origin == ATTNJIT_ORIGIN_COMPILED);
  CHECK(info->cached == 1);
  CHECK(contains(info->ptx, ".entry attnjit_fwd"));
  CHECK(contains(info->source, "attnjit_fwd"));
  attnjit_variant_info_destroy(info);

  /* A second look finds the cubin in the process. */
  options.parts = ATTNJIT_INSPECT_RESOURCES;
  CHECK(attnjit_variant_inspect(&info, variant, &options) == ATTNJIT_OK);
  if (info == NULL) return;
  CHECK(info->origin == ATTNJIT_ORIGIN_MEMORY);
  CHECK(info->decode_registers > 0); /* from the cubin's record, not a recompile */
  CHECK(info->summary_registers > 0 && info->merge_registers > 0);
  CHECK(info->source == NULL && info->ptx == NULL);
  attnjit_variant_info_destroy(info);
}

/* NULL options: every part, for the runtime's GPU, else (here, a CPU runtime) sm_90. */
static void test_default_options(void) {
  attnjit_variant_info* info = NULL;
  CHECK(attnjit_variant_inspect(&info, variant, NULL) == ATTNJIT_OK);
  if (info == NULL) return;
  CHECK(strcmp(info->arch, "sm_90") == 0);
  CHECK(info->has_resources == 1 && info->source != NULL && info->ptx != NULL);
  attnjit_variant_info_destroy(info);
}

static void test_bad_input(void) {
  attnjit_inspect_options options;
  attnjit_inspect_options_init(&options);
  options.parts = ATTNJIT_INSPECT_SOURCE;
  attnjit_variant_info* info = (attnjit_variant_info*)&options; /* not NULL: must be reset */
  CHECK(attnjit_variant_inspect(NULL, variant, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_variant_inspect(&info, NULL, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(info == NULL);
  CHECK(contains(attnjit_last_error(), "variant is NULL"));

  options.version = 99;
  CHECK(attnjit_variant_inspect(&info, variant, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(attnjit_last_error(), "attnjit_inspect_options_init"));
  options.version = ATTNJIT_INSPECT_OPTIONS_VERSION;

  options.arch = "sm_xy";
  CHECK(attnjit_variant_inspect(&info, variant, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(attnjit_last_error(), "unknown arch"));
  options.arch = "sm_75";
  CHECK(attnjit_variant_inspect(&info, variant, &options) == ATTNJIT_ERROR_UNSUPPORTED);
  options.arch = "sm_80";
  options.parts = 8u;
  CHECK(attnjit_variant_inspect(&info, variant, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(info == NULL);
  attnjit_variant_info_destroy(NULL);
}

static void test_cpu_only_dtype_is_unsupported(void) {
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.dtype = ATTNJIT_DTYPE_FP32;
  attnjit_variant* fp32 = NULL;
  CHECK(attnjit_variant_create(&fp32, runtime, &desc) == ATTNJIT_OK);
  attnjit_inspect_options options;
  attnjit_inspect_options_init(&options);
  options.arch = "sm_90";
  options.parts = ATTNJIT_INSPECT_SOURCE;
  attnjit_variant_info* info = NULL;
  CHECK(attnjit_variant_inspect(&info, fp32, &options) == ATTNJIT_ERROR_UNSUPPORTED);
  CHECK(info == NULL);
  attnjit_variant_destroy(fp32);
}

/* The kernel family of `v` on `arch` with ATTNJIT_KERNEL_FAMILY = `family` (NULL: unset), as a
 * static string ("" on failure); its source must instantiate the matching template. */
static const char* family_of(attnjit_variant* v, const char* arch, const char* family) {
  static char answer[8];
  if (family == NULL) {
    unsetenv("ATTNJIT_KERNEL_FAMILY");
  } else {
    setenv("ATTNJIT_KERNEL_FAMILY", family, 1);
  }
  attnjit_inspect_options options;
  attnjit_inspect_options_init(&options);
  options.arch = arch;
  options.parts = ATTNJIT_INSPECT_SOURCE;
  attnjit_variant_info* info = NULL;
  answer[0] = '\0';
  CHECK(attnjit_variant_inspect(&info, v, &options) == ATTNJIT_OK);
  unsetenv("ATTNJIT_KERNEL_FAMILY");
  if (info == NULL) return answer;
  CHECK(info->kernel_family != NULL);
  if (info->kernel_family != NULL && strlen(info->kernel_family) < sizeof answer) {
    strcpy(answer, info->kernel_family);
  }
  const int sm90_source = contains(info->source, "attention_forward_sm90<");
  CHECK(sm90_source == (strcmp(answer, "sm90") == 0));
  CHECK(contains(info->cache_path, arch));
  attnjit_variant_info_destroy(info);
  return answer;
}

/* sm90 only on sm_90a and only where the sm90 kernel implements the variant; by default (auto)
 * too (the sm90 kernel passed on an H200); sm80 forces the old kernel. */
static void test_kernel_family(void) {
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.head_dim = 128;
  attnjit_variant* noop = NULL;
  CHECK(attnjit_variant_create(&noop, runtime, &desc) == ATTNJIT_OK);
  if (noop == NULL) return;
  CHECK(strcmp(family_of(noop, "sm_90a", "sm90"), "sm90") == 0);
  CHECK(strcmp(family_of(noop, "sm_90a", NULL), "sm90") == 0);
  CHECK(strcmp(family_of(noop, "sm_90a", "auto"), "sm90") == 0);
  CHECK(strcmp(family_of(noop, "sm_90a", "sm80"), "sm80") == 0);
  CHECK(strcmp(family_of(noop, "sm_90", "sm90"), "sm80") == 0);
  CHECK(strcmp(family_of(noop, "sm_80", "sm90"), "sm80") == 0);
  CHECK(strcmp(family_of(variant, "sm_90a", NULL), "sm90") == 0);
  CHECK(strcmp(family_of(variant, "sm_90a", "sm90"), "sm90") == 0); /* masks too */

  /* A value that is none of the choices is refused, naming them. */
  setenv("ATTNJIT_KERNEL_FAMILY", "sm100", 1);
  attnjit_inspect_options options;
  attnjit_inspect_options_init(&options);
  options.arch = "sm_90a";
  options.parts = ATTNJIT_INSPECT_SOURCE;
  attnjit_variant_info* info = NULL;
  CHECK(attnjit_variant_inspect(&info, noop, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(attnjit_last_error(), "auto, sm80, sm90"));
  unsetenv("ATTNJIT_KERNEL_FAMILY");
  attnjit_variant_destroy(noop);
}

/* The variant's report on `arch` (source only). */
static attnjit_variant_info* inspect_on(attnjit_variant* v, const char* arch) {
  attnjit_inspect_options options;
  attnjit_inspect_options_init(&options);
  options.arch = arch;
  options.parts = ATTNJIT_INSPECT_SOURCE;
  attnjit_variant_info* info = NULL;
  CHECK(attnjit_variant_inspect(&info, v, &options) == ATTNJIT_OK);
  return info;
}

/* The short-rows kernel: a masked head-dim-64 variant of the sm90 kernel's default tiles whose
 * mask reads no tensor has one (the global variant, causal); not on sm_80, not at head dim 128,
 * not without a mask, and not under an ATTNJIT_TUNE that changes the schedule. */
static void test_short_rows_kernel(void) {
  attnjit_variant_info* info = inspect_on(variant, "sm_90a");
  if (info != NULL) {
    CHECK(info->has_short_rows_kernel == 1);
    CHECK(info->short_rows_max_tiles > 0);
    attnjit_variant_info_destroy(info);
  }
  info = inspect_on(variant, "sm_80");
  if (info != NULL) {
    CHECK(info->has_short_rows_kernel == 0 && info->short_rows_max_tiles == 0);
    attnjit_variant_info_destroy(info);
  }
  setenv("ATTNJIT_TUNE", "sm90_handoff=1", 1);
  info = inspect_on(variant, "sm_90a");
  if (info != NULL) {
    CHECK(info->has_short_rows_kernel == 0);
    attnjit_variant_info_destroy(info);
  }
  /* The watchdog alone leaves the schedule, hence the short-rows kernel, as it is. */
  setenv("ATTNJIT_TUNE", "sm90_watchdog_ms=1000", 1);
  info = inspect_on(variant, "sm_90a");
  if (info != NULL) {
    CHECK(info->has_short_rows_kernel == 1);
    attnjit_variant_info_destroy(info);
  }
  unsetenv("ATTNJIT_TUNE");
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  for (int masked = 0; masked < 2; ++masked) {
    desc.mask = masked ? "kv_idx <= q_idx" : NULL;
    desc.head_dim = masked ? 128 : 64;
    attnjit_variant* other = NULL;
    CHECK(attnjit_variant_create(&other, runtime, &desc) == ATTNJIT_OK);
    if (other == NULL) continue;
    info = inspect_on(other, "sm_90a");
    if (info != NULL) {
      CHECK(info->has_short_rows_kernel == 0);
      attnjit_variant_info_destroy(info);
    }
    attnjit_variant_destroy(other);
  }
}

/* The variant's source on sm_90a under ATTNJIT_TUNE=`tune` (and the family the environment
 * names); NULL, after a failed CHECK, when it is refused. */
static attnjit_variant_info* inspect_tuned(const char* tune) {
  setenv("ATTNJIT_TUNE", tune, 1);
  return inspect_on(variant, "sm_90a");
}

/* ATTNJIT_TUNE reaches the reported configuration, and a malformed one is refused with the
 * item named, as a status code. */
static void test_tuning(void) {
  setenv("ATTNJIT_KERNEL_FAMILY", "sm90", 1);
  attnjit_variant_info* info = inspect_tuned("sm90_overlap=1,sm90_stages=3");
  if (info != NULL) {
    CHECK(info->sm90_overlap == 1);
    CHECK(info->sm90_persistent == 0);
    CHECK(info->sm90_p_smem == 0);
    CHECK(info->num_stages == 3);
    attnjit_variant_info_destroy(info);
  }
  /* Three consumer warpgroups: 192 queries per block in 16 warps (a producer and 3 x 4). */
  info = inspect_tuned("sm90_block_m=192");
  if (info != NULL) {
    CHECK(info->block_m == 192 && info->num_warps == 16);
    CHECK(contains(info->source, "__launch_bounds__(512, 1)"));
    attnjit_variant_info_destroy(info);
  }
  /* P through shared memory: reported, and in the kernel's template arguments. */
  info = inspect_tuned("sm90_p_smem=1");
  if (info != NULL) {
    CHECK(info->sm90_p_smem == 1);
    CHECK(info->sm90_watchdog_ms == 0);
    CHECK(contains(info->source, "attnjit::kSm90FeaturePInSmem"));
    attnjit_variant_info_destroy(info);
  }
  /* The handoff and the software exponentials: reported, and in the template arguments. */
  info = inspect_tuned("sm90_handoff=1,sm90_poly_exp2=3");
  if (info != NULL) {
    CHECK(info->sm90_handoff == 1 && info->sm90_poly_exp2 == 3 && info->sm90_fold_m192 == 0);
    CHECK(contains(info->source, "attnjit::kSm90FeatureTileHandoff"));
    attnjit_variant_info_destroy(info);
  }
  info = inspect_tuned("sm90_block_m=192,sm90_fold_m192=1");
  if (info != NULL) {
    CHECK(info->sm90_fold_m192 == 1 && info->sm90_handoff == 0 && info->sm90_poly_exp2 == 0);
    attnjit_variant_info_destroy(info);
  }
  /* Two 64-row blocks per SM: the compiled kernel's resources say an SM of sm_90a holds both;
   * without resources the field stays 0. */
  {
    attnjit_inspect_options resources;
    attnjit_inspect_options_init(&resources);
    resources.arch = "sm_90a";
    resources.parts = ATTNJIT_INSPECT_RESOURCES;
    setenv("ATTNJIT_TUNE", "sm90_block_m=64,sm90_blocks_per_sm=2", 1);
    info = NULL;
    CHECK(attnjit_variant_inspect(&info, variant, &resources) == ATTNJIT_OK);
    if (info != NULL) {
      CHECK(info->block_m == 64 && info->num_warps == 8 && info->blocks_per_sm == 2);
      CHECK(info->resident_blocks_per_sm == 2);
      attnjit_variant_info_destroy(info);
    }
    info = inspect_tuned("sm90_block_m=64,sm90_blocks_per_sm=2");
    if (info != NULL) {
      CHECK(info->resident_blocks_per_sm == 0);
      attnjit_variant_info_destroy(info);
    }
  }
  /* The mbarrier watchdog: reported, and defined in the kernel's source. */
  info = inspect_tuned("sm90_watchdog_ms=5000");
  if (info != NULL) {
    CHECK(info->sm90_watchdog_ms == 5000);
    CHECK(contains(info->source, "#define ATTNJIT_SM90_WATCHDOG_NS 5000000000ull"));
    attnjit_variant_info_destroy(info);
  }
  setenv("ATTNJIT_KERNEL_FAMILY", "sm80", 1);
  info = inspect_tuned("sm80_block_m=64,sm80_warps=4,sm80_blocks_per_sm=2");
  if (info != NULL) {
    CHECK(info->block_m == 64 && info->num_warps == 4 && info->blocks_per_sm == 2);
    CHECK(info->sm90_overlap == 0);
    CHECK(contains(info->source, "__launch_bounds__(128, 2)"));
    attnjit_variant_info_destroy(info);
  }
  attnjit_inspect_options options;
  attnjit_inspect_options_init(&options);
  options.arch = "sm_90a";
  options.parts = ATTNJIT_INSPECT_SOURCE;
  info = NULL;
  setenv("ATTNJIT_TUNE", "sm80_warps=0", 1);
  CHECK(attnjit_variant_inspect(&info, variant, &options) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(info == NULL);
  CHECK(contains(attnjit_last_error(), "sm80_warps=0"));
  unsetenv("ATTNJIT_TUNE");
  unsetenv("ATTNJIT_KERNEL_FAMILY");
}

/* A heavy score without a mask on sm_90a: the wide default tiles (128 x 176 at head dim 128)
 * spill heavily, so the kernel a call gets, and the one inspect describes, has 128 x 128; a
 * standard score keeps 176. */
static void test_heavy_score_tiles(void) {
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.head_dim = 128;
  desc.score = "score / (1 + exp(-score))";
  attnjit_variant* heavy = NULL;
  CHECK(attnjit_variant_create(&heavy, runtime, &desc) == ATTNJIT_OK);
  if (heavy == NULL) return;
  attnjit_variant_info* info = inspect_on(heavy, "sm_90a");
  if (info != NULL) {
    CHECK(info->block_m == 128 && info->block_n == 128);
    CHECK(info->wide_block_m == 128 && info->wide_block_n == 176);
    CHECK(info->wide_spill_bytes >= 64);
    CHECK(contains(info->source, "attention_forward_sm90<"));
    CHECK(contains(info->cache_path, info->cache_key));
    attnjit_variant_info_destroy(info);
  }
  attnjit_variant_destroy(heavy);
  desc.score = "score * 0.5";
  attnjit_variant* light = NULL;
  CHECK(attnjit_variant_create(&light, runtime, &desc) == ATTNJIT_OK);
  if (light == NULL) return;
  info = inspect_on(light, "sm_90a");
  if (info != NULL) {
    CHECK(info->block_m == 128 && info->block_n == 176);
    CHECK(info->wide_block_m == 0 && info->wide_block_n == 0 && info->wide_spill_bytes == 0);
    attnjit_variant_info_destroy(info);
  }
  attnjit_variant_destroy(light);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CACHE_DIR\n", argv[0]);
    return 2;
  }
  attnjit_cache_clear_options clear;
  attnjit_cache_clear_options_init(&clear);
  clear.cache_dir = argv[1];
  CHECK(attnjit_cache_clear(NULL, &clear) == ATTNJIT_OK);
  create_variant(argv[1]);
  test_source_only_compiles_nothing();
  test_all_parts_compile_cubin_and_ptx();
  test_default_options();
  test_bad_input();
  test_cpu_only_dtype_is_unsupported();
  test_kernel_family();
  test_short_rows_kernel();
  test_tuning();
  test_heavy_score_tiles();
  attnjit_variant_destroy(variant);
  attnjit_runtime_destroy(runtime);
  return check_summary();
}
