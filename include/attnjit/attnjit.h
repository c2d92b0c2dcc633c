/* attnjit: JIT-compiled custom attention for NVIDIA GPUs, with a CPU reference.
 *
 * The C API. It compiles as C99 and C++. Conventions:
 * - Opaque handles with create/destroy pairs; destroy(NULL) is a no-op.
 * - Every function that can fail returns an attnjit_status; out-parameters come first.
 * - On failure, attnjit_last_error() returns a message for the calling thread (never NULL).
 *   Check the status, not the message.
 * - Option structs carry a version as their first field; initialise them with the matching
 *   *_init function.
 * - No C++ exception crosses this boundary.
 */
#ifndef ATTNJIT_ATTNJIT_H
#define ATTNJIT_ATTNJIT_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define ATTNJIT_API
#else
#define ATTNJIT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNJIT_VERSION_MAJOR 0
#define ATTNJIT_VERSION_MINOR 1
#define ATTNJIT_VERSION_PATCH 0
#define ATTNJIT_VERSION_NUMBER \
  (ATTNJIT_VERSION_MAJOR * 10000 + ATTNJIT_VERSION_MINOR * 100 + ATTNJIT_VERSION_PATCH)

/* Status codes. The values never change. */
typedef enum attnjit_status {
  ATTNJIT_OK = 0,
  ATTNJIT_ERROR_INVALID_ARGUMENT = 1, /* a bad argument, shape, pointer or option */
  ATTNJIT_ERROR_PARSE = 2,            /* a mask or score expression does not parse or type-check */
  ATTNJIT_ERROR_UNSUPPORTED = 3,      /* valid, but not supported (dtype, head dim, arch) */
  ATTNJIT_ERROR_NO_DEVICE = 4,        /* no CUDA driver or no usable device */
  ATTNJIT_ERROR_COMPILE = 5,          /* NVRTC failed; the message carries its log */
  ATTNJIT_ERROR_CACHE = 6,            /* the kernel cache could not be used */
  ATTNJIT_ERROR_CUDA = 7,             /* a CUDA driver call failed */
  ATTNJIT_ERROR_OUT_OF_MEMORY = 8,
  ATTNJIT_ERROR_IO = 9,
  ATTNJIT_ERROR_INTERNAL = 10
} attnjit_status;

typedef enum attnjit_backend {
  ATTNJIT_BACKEND_AUTO = 0, /* the GPU when usable, else the CPU reference with one warning */
  ATTNJIT_BACKEND_CUDA = 1, /* the GPU or an error */
  ATTNJIT_BACKEND_CPU = 2   /* the multi-threaded CPU reference */
} attnjit_backend;

typedef enum attnjit_log_level {
  ATTNJIT_LOG_DEFAULT = 0, /* ATTNJIT_LOG_LEVEL from the environment, else warn */
  ATTNJIT_LOG_TRACE = 1,
  ATTNJIT_LOG_DEBUG = 2,
  ATTNJIT_LOG_INFO = 3,
  ATTNJIT_LOG_WARN = 4,
  ATTNJIT_LOG_ERROR = 5,
  ATTNJIT_LOG_OFF = 6
} attnjit_log_level;

typedef enum attnjit_dtype {
  ATTNJIT_DTYPE_BF16 = 0,
  ATTNJIT_DTYPE_FP16 = 1,
  ATTNJIT_DTYPE_FP32 = 2 /* CPU backend only */
} attnjit_dtype;

typedef enum attnjit_layout {
  ATTNJIT_LAYOUT_BHLD = 0, /* [batch, heads, len, head_dim], contiguous */
  ATTNJIT_LAYOUT_BLHD = 1  /* [batch, len, heads, head_dim], contiguous */
} attnjit_layout;

typedef enum attnjit_param_type { ATTNJIT_PARAM_INT = 0, ATTNJIT_PARAM_FLOAT = 1 } attnjit_param_type;

typedef enum attnjit_tensor_type {
  ATTNJIT_TENSOR_INT32 = 0,
  ATTNJIT_TENSOR_FLOAT32 = 1
} attnjit_tensor_type;

typedef struct attnjit_runtime attnjit_runtime;
typedef struct attnjit_variant attnjit_variant;

/* ---- Version and errors ---- */

ATTNJIT_API const char* attnjit_version(void); /* "0.1.0" */
ATTNJIT_API int attnjit_version_number(void);  /* ATTNJIT_VERSION_NUMBER of the library */
ATTNJIT_API const char* attnjit_status_string(attnjit_status status);
/* The message of the calling thread's last failure; "" if none. Never NULL. */
ATTNJIT_API const char* attnjit_last_error(void);
/* The level of attnjit's log (to stderr), for the whole process. ATTNJIT_LOG_DEFAULT changes
 * nothing, but reads ATTNJIT_LOG_LEVEL now if the log has not been used yet (a value it does not
 * know is reported once, as a warning). An unknown level gives ATTNJIT_ERROR_INVALID_ARGUMENT. */
ATTNJIT_API attnjit_status attnjit_set_log_level(attnjit_log_level level);

/* ---- Runtime ---- */

#define ATTNJIT_RUNTIME_OPTIONS_VERSION 1
typedef struct attnjit_runtime_options {
  int version;           /* ATTNJIT_RUNTIME_OPTIONS_VERSION */
  const char* cache_dir; /* NULL: ATTNJIT_CACHE_DIR, else $XDG_CACHE_HOME/attnjit, else ~/.cache/attnjit */
  attnjit_backend backend;
  attnjit_log_level log_level;
} attnjit_runtime_options;

ATTNJIT_API void attnjit_runtime_options_init(attnjit_runtime_options* options);
/* options may be NULL for the defaults. */
ATTNJIT_API attnjit_status attnjit_runtime_create(attnjit_runtime** out,
                                                  const attnjit_runtime_options* options);
ATTNJIT_API void attnjit_runtime_destroy(attnjit_runtime* runtime);
/* The backend actually in use (AUTO resolves to CUDA or CPU at creation). */
ATTNJIT_API attnjit_backend attnjit_runtime_backend(const attnjit_runtime* runtime);

/* ---- Variants ---- */

typedef struct attnjit_param_decl {
  const char* name;
  attnjit_param_type type;
} attnjit_param_decl;

typedef struct attnjit_tensor_decl {
  const char* name;
  attnjit_tensor_type type;
  int rank; /* 1 or 2 */
} attnjit_tensor_decl;

#define ATTNJIT_VARIANT_DESC_VERSION 1
typedef struct attnjit_variant_desc {
  int version;       /* ATTNJIT_VARIANT_DESC_VERSION */
  const char* mask;  /* NULL or "": "true" */
  const char* score; /* NULL or "": "score" */
  const attnjit_param_decl* params; /* declaration order is the order of values at each call */
  int num_params;
  const attnjit_tensor_decl* tensors;
  int num_tensors;
  attnjit_dtype dtype; /* of query, key, value and output */
  int head_dim;
} attnjit_variant_desc;

ATTNJIT_API void attnjit_variant_desc_init(attnjit_variant_desc* desc);
/* Parses and type-checks the expressions. A bad expression gives ATTNJIT_ERROR_PARSE and a
 * message with the column and a caret. The variant keeps a reference to the runtime, which must
 * outlive it. */
ATTNJIT_API attnjit_status attnjit_variant_create(attnjit_variant** out, attnjit_runtime* runtime,
                                                  const attnjit_variant_desc* desc);
/* Compiles (or finds in the cache) every kernel a forward call of the variant may run on the
 * runtime's device, and loads each into the calling thread's current CUDA context (the primary
 * context if none): on an H100 the Hopper kernel, the sm80 kernel that decoding steps run on, the
 * Hopper kernel that splits the keys of calls of too few query tiles and, for some masks, the
 * short-rows kernel, compiled several at a time. After it no call compiles or
 * loads anything in that context, so a CUDA graph capture may begin at once. Optional: without
 * it, each call compiles and loads what it runs the first time it needs it. No-op on the CPU. */
ATTNJIT_API attnjit_status attnjit_variant_prepare(attnjit_variant* variant);
/* The same for the kernels of calls with a paged key/value cache (attnjit_forward_args'
 * kv_page_table) or variable-length sequences (q_seq_starts ...), which attnjit_variant_prepare
 * leaves alone: the sm80 family's (decoding steps, pages under 8 rows, every variable-length call;
 * every GPU) and, on an H100, the Hopper kernels' (paged prefills, split where their query tiles
 * cannot fill the GPU). A serving program calls both
 * before it captures such calls into a graph. No-op on the CPU. */
ATTNJIT_API attnjit_status attnjit_variant_prepare_paged(attnjit_variant* variant);
ATTNJIT_API void attnjit_variant_destroy(attnjit_variant* variant);

/* ---- Forward pass ---- */

typedef union attnjit_scalar {
  int32_t i;
  float f;
} attnjit_scalar;

typedef struct attnjit_tensor_arg {
  const void* data; /* device memory on the CUDA backend, host memory on the CPU backend */
  int64_t dims[2];  /* dims[1] ignored for rank-1 tensors; row-major, contiguous */
} attnjit_tensor_arg;

/* 2 adds the paged key/value cache (kv_page_table ...), 3 variable-length sequences
 * (q_seq_starts ...); structs of versions 1 and 2 are still accepted. */
#define ATTNJIT_FORWARD_ARGS_VERSION 3
typedef struct attnjit_forward_args {
  int version; /* ATTNJIT_FORWARD_ARGS_VERSION, 2 (without the fields after kv_num_pages) or 1
                  (without the fields after `stream`) */
  const void* q;
  const void* k;
  const void* v;
  void* out;  /* same dtype as q */
  float* lse; /* optional: [batch, num_heads_q, q_len] natural-log log-sum-exp, or NULL */
  attnjit_dtype q_dtype, k_dtype, v_dtype;
  int batch;
  int num_heads_q;
  int num_heads_kv; /* num_heads_q must be a multiple (GQA / MQA) */
  int q_len;
  int kv_len;
  attnjit_layout layout;
  /* Optional explicit strides in elements (batch, head, row); the head-dim stride is 1. All three
   * zero: the strides of `layout`. Otherwise all three are used as given and each must be set:
   * a partial set (say only the row stride) is refused with ATTNJIT_ERROR_INVALID_ARGUMENT, never
   * completed, and a zero batch or head stride is only accepted where batch or the head count
   * is 1. Strides are non-negative; every offset must fit in 64 bits (in bytes); inputs may
   * overlap, but no two output elements may share memory (a head stride of 0, or heads closer
   * than their rows reach, is refused). */
  int64_t q_strides[3], k_strides[3], v_strides[3], out_strides[3];
  float scale; /* 0: 1/sqrt(head_dim) */
  const attnjit_scalar* params; /* one per declared parameter, in declaration order */
  int num_params;
  const attnjit_tensor_arg* tensors; /* one per declared tensor, in declaration order */
  int num_tensors;
  void* stream; /* CUstream (NULL: the default stream); ignored on the CPU backend */
  /* Paged key/value cache (version 2; kv_page_table NULL: k and v are dense as above). k and v
   * point at pools of kv_num_pages pages of kv_page_size rows, laid out as `layout` (or the
   * explicit strides) says with the pages in place of the batch: [pages, num_heads_kv,
   * page_size, head_dim] for BHLD, [pages, page_size, num_heads_kv, head_dim] for BLHD (vLLM's
   * and FlashInfer's NHD). Row j of sequence b is row j % kv_page_size of page
   * kv_page_table[b * kv_page_table_width + j / kv_page_size]. An entry outside [0, kv_num_pages)
   * (say -1 in a slot past a sequence's end) reads as zero rows: give such keys a mask (kv_idx <
   * lens[b], or kv_seq_lens below). On an H100 prefills run on the Hopper kernel (pages of a
   * multiple of 8 rows), decoding steps on the sm80 kernel. The table is device memory on the CUDA
   * backend, host memory on the CPU backend. */
  const int32_t* kv_page_table; /* [batch, kv_page_table_width] */
  int kv_page_table_width;      /* >= ceil(kv_len / kv_page_size) */
  int kv_page_size;             /* rows per page, any count: 1, 16, 64, 528 ... */
  int kv_num_pages;             /* pages in each of the key and value pools */
  /* Variable-length sequences (version 3; FlashAttention's cu_seqlens_q, cu_seqlens_k and
   * seqused_k). All NULL: every sequence has q_len queries and kv_len keys. The tables are int32
   * in device memory on the CUDA backend (host memory on the CPU backend) and their contents are
   * not checked: starts must not decrease, and every count must be at most q_len or kv_len
   * (rows past them are not computed; a start or count outside the tensors is clamped to them).
   * The mask and score see each sequence's own q_len and kv_len, so a causal mask aligned to
   * the end of each sequence's keys is q_idx + kv_len - q_len >= kv_idx.
   * With q_seq_starts, q and out hold the sequences' queries packed: sequence b's are rows
   * q_seq_starts[b] .. q_seq_starts[b + 1] - 1 of q_total rows, [q_total, num_heads_q,
   * head_dim] for BLHD, [num_heads_q, q_total, head_dim] for BHLD (batch strides unused); q_len
   * is the longest sequence's count; lse is [num_heads_q, q_total].
   * kv_seq_starts does the same for dense k and v (kv_total rows, kv_len the longest); or
   * kv_seq_lens gives sequence b kv_seq_lens[b] keys of its batch entry of a padded k and v, or
   * of its row of the page table.
   * These calls run on the variant's kernel of paged calls: on an H100 the Hopper kernel's
   * where it takes them (the README's "Variable-length sequences" says where), else the sm80
   * family's. attnjit_variant_prepare_paged readies their kernel. */
  const int32_t* q_seq_starts;  /* [batch + 1], or NULL */
  int q_total;                  /* rows of q and out with q_seq_starts, else 0 */
  const int32_t* kv_seq_starts; /* [batch + 1], or NULL (not with kv_page_table) */
  int kv_total;                 /* rows of k and v with kv_seq_starts, else 0 */
  const int32_t* kv_seq_lens;   /* [batch], or NULL (not with kv_seq_starts) */
} attnjit_forward_args;

ATTNJIT_API void attnjit_forward_args_init(attnjit_forward_args* args);
/* Runs attention. On the CUDA backend the call is asynchronous on `stream`; on the CPU backend
 * it returns when the output is written. */
ATTNJIT_API attnjit_status attnjit_forward(attnjit_variant* variant,
                                           const attnjit_forward_args* args);

/* ---- Variant information ---- */

/* Where a kernel came from on this request. */
typedef enum attnjit_kernel_origin {
  ATTNJIT_ORIGIN_COMPILED = 0, /* compiled by NVRTC now */
  ATTNJIT_ORIGIN_DISK = 1,     /* loaded from the on-disk cache */
  ATTNJIT_ORIGIN_MEMORY = 2    /* already held by this process */
} attnjit_kernel_origin;

/* What attnjit_variant_inspect produces beyond the configuration, key and path (which are
 * always filled). Each part that compiles goes through the runtime's kernel cache. All of it
 * describes the kernel a call is served: on sm_90a a variant without a mask gets wider tiles
 * unless its kernel would spill heavily there (a heavy score), when it gets a masked variant's;
 * knowing which compiles (or loads) the wide kernel, whatever the parts. */
#define ATTNJIT_INSPECT_SOURCE 1u    /* the generated CUDA source (no compile but the above) */
#define ATTNJIT_INSPECT_RESOURCES 2u /* compile (or load) the cubin: registers, spills, ... */
#define ATTNJIT_INSPECT_PTX 4u       /* compile (or load) the PTX */
#define ATTNJIT_INSPECT_ALL 7u

/* 2 adds paged_kv, 3 split_kv; structs of versions 1 and 2 are still accepted. */
#define ATTNJIT_INSPECT_OPTIONS_VERSION 3
typedef struct attnjit_inspect_options {
  int version;      /* ATTNJIT_INSPECT_OPTIONS_VERSION, or 1 (without paged_kv), 2 (without
                       split_kv) */
  const char* arch; /* "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"; NULL: the runtime's GPU
                       (a compute capability 9.0 device is sm_90a), else sm_90 */
  unsigned parts;   /* ATTNJIT_INSPECT_* bits; attnjit_inspect_options_init sets ALL */
  int paged_kv;     /* 1: the kernel of the variant's calls over a paged key/value cache
                       instead of the one its dense calls run: on sm_90a the sm90 kernel's,
                       which prefills run (ATTNJIT_KERNEL_FAMILY=sm80: the sm80 family's, which
                       decoding steps and pages under 8 rows run on every arch) */
  int split_kv;     /* 1: the sm90 kernel that splits the keys of calls of too few query tiles
                       to fill the GPU (with paged_kv: of such paged calls); sm_90a only, for a
                       variant the sm90 kernel serves (else ATTNJIT_ERROR_INVALID_ARGUMENT) */
} attnjit_inspect_options;

/* Allocated by attnjit_variant_inspect, freed by attnjit_variant_info_destroy; every string in
 * it is owned by it. Fields may be appended in later versions (never reordered). */
typedef struct attnjit_variant_info {
  const char* arch;       /* as validated: "sm_90a" */
  const char* kernel;     /* the entry point: "attnjit_fwd" */
  const char* canonical_mask; /* the mask as attnjit reads it (canonical form) */
  int mask_reads_tensors; /* 1: tiles are classified per call; 0: from indices alone */
  /* The kernel configuration chosen for this arch, dtype and head dim. */
  int block_m, block_n, num_warps, num_stages;
  int dynamic_smem_bytes;
  /* The compiled cubin's resources: 0 unless ATTNJIT_INSPECT_RESOURCES was asked. */
  int has_resources;
  int registers, static_smem_bytes, stack_frame_bytes, spill_store_bytes, spill_load_bytes;
  size_t cubin_bytes;
  attnjit_kernel_origin origin; /* of the cubin, when has_resources */
  /* The cubin's cache entry: its key, and the file it has or would have. */
  const char* cache_key;
  const char* cache_path;
  int cached;         /* 1 when cache_path exists now */
  const char* source; /* NULL unless ATTNJIT_INSPECT_SOURCE */
  const char* ptx;    /* NULL unless ATTNJIT_INSPECT_PTX */
  /* Which forward kernel the variant gets on this arch: "sm80" (the FlashAttention-2 style
   * kernel, every arch) or "sm90" (the Hopper kernel, sm_90a only; chosen by default only once
   * verified on hardware, or when the environment sets ATTNJIT_KERNEL_FAMILY=sm90). */
  const char* kernel_family;
  /* Blocks per SM the kernel was built for (the sm80 kernel's launch bounds: 1, or 2 at head dim
   * 32), and the sm90 kernel's schedule (1: on): intra-warpgroup overlap, a persistent grid, and
   * P V reading P from shared memory rather than registers. ATTNJIT_TUNE can change all of them
   * (see README, "The Hopper kernel"). */
  int blocks_per_sm;
  int sm90_overlap;
  int sm90_persistent;
  int sm90_p_smem;
  /* The sm90 kernel's mbarrier watchdog (ATTNJIT_TUNE sm90_watchdog_ms): an mbarrier wait longer
   * than this many milliseconds records which wait and faults the kernel, and the failed call's
   * error names the wait; 0: off (every other kernel). */
  int sm90_watchdog_ms;
  /* The decoding entry ("attnjit_fwd_decode"), which runs launches of at most decode_block_m
   * query rows (after packing GQA groups; README, "Decoding"): 1 where the module has one (the
   * sm80 kernel at head dims 64 and up), else 0 and the fields below 0. Its tiles, and its
   * cubin resources when has_resources. */
  int has_decode_entry;
  int decode_block_m, decode_block_n, decode_num_warps, decode_num_stages;
  int decode_dynamic_smem_bytes, decode_blocks_per_sm;
  int decode_registers, decode_stack_frame_bytes, decode_spill_store_bytes,
      decode_spill_load_bytes;
  /* More of the sm90 kernel's schedule (ATTNJIT_TUNE; README, "The Hopper kernel"; 0 for the
   * sm80 kernel): the producer alone classifies key tiles and hands each kept one to the
   * consumers (1: on); of each 8 n8 chunks of a score tile, how many are exponentiated on the FMA
   * pipe rather than by MUFU (0 to 8); three-consumer blocks fold the softmax scale into the
   * exponent (1: on). */
  int sm90_handoff;
  int sm90_poly_exp2;
  int sm90_fold_m192;
  /* With has_resources: how many blocks of the forward entry (and of the decoding entry, where
   * there is one) one SM of the arch keeps resident, from the registers ptxas used, the threads
   * and the shared memory. Below blocks_per_sm (decode_blocks_per_sm) means the kernel was built
   * for an occupancy the arch cannot give. */
  int resident_blocks_per_sm;
  int decode_resident_blocks_per_sm;
  /* 1 when calls whose query tiles keep few key tiles (at most short_rows_max_tiles of
   * block_n keys on average, sampled by the host) run on a second kernel of this variant: the
   * sm90 kernel with two blocks per SM and the tile handoff (README, "The Hopper kernel"; a
   * masked head-dim-64 variant whose mask reads no tensor, unless ATTNJIT_TUNE sets more than
   * the watchdog). The same source as ATTNJIT_TUNE=sm90_blocks_per_sm=2,sm90_handoff=1, so
   * inspecting under that setting shows it. 0 otherwise. */
  int has_short_rows_kernel;
  int short_rows_max_tiles;
  /* The module's other entries, with has_resources: the tensor-summary kernel
   * ("attnjit_tensor_summary", in every module; launched before the forward kernel when the mask
   * reads tensors) and the split-KV merge ("attnjit_split_combine"; has_merge_entry is 1 where
   * the module has one, the sm80 kernel's and the sm90 split kernel's, else 0 and its fields
   * 0). */
  int summary_registers, summary_stack_frame_bytes, summary_spill_store_bytes,
      summary_spill_load_bytes;
  int has_merge_entry;
  int merge_registers, merge_stack_frame_bytes, merge_spill_store_bytes, merge_spill_load_bytes;
  /* On sm_90a a variant without a mask gets wider tiles than a masked one, unless its kernel
   * spills heavily there (64 bytes or more, stored plus loaded: a heavy score); then block_m and
   * block_n above are the masked tiles, and these the wide ones and their kernel's spilled
   * bytes. All 0 when the default tiles serve. */
  int wide_block_m, wide_block_n, wide_spill_bytes;
  int paged_kv; /* 1: this is the kernel of paged calls (attnjit_inspect_options.paged_kv) */
  int split_kv; /* 1: this is the sm90 split kernel (attnjit_inspect_options.split_kv) */
} attnjit_variant_info;

ATTNJIT_API void attnjit_inspect_options_init(attnjit_inspect_options* options);
/* options may be NULL for the defaults. Works on either backend (NVRTC does not need a GPU). An
 * unknown arch gives ATTNJIT_ERROR_INVALID_ARGUMENT, one below sm_80 ATTNJIT_ERROR_UNSUPPORTED;
 * a compile failure ATTNJIT_ERROR_COMPILE with the log in the message. */
ATTNJIT_API attnjit_status attnjit_variant_inspect(attnjit_variant_info** out,
                                                   attnjit_variant* variant,
                                                   const attnjit_inspect_options* options);
ATTNJIT_API void attnjit_variant_info_destroy(attnjit_variant_info* info);

/* ---- The kernel cache ----
 * These work on a cache directory without a runtime: cache_dir NULL or "" means the default
 * (ATTNJIT_CACHE_DIR, else $XDG_CACHE_HOME/attnjit, else ~/.cache/attnjit). */

/* The cache root, into a caller-owned buffer: *length receives strlen(path) always; the path and
 * its NUL are copied when capacity > *length, else ATTNJIT_ERROR_INVALID_ARGUMENT is returned
 * and buffer is left untouched (pass NULL and 0 to ask for the length). */
ATTNJIT_API attnjit_status attnjit_cache_path(char* buffer, size_t capacity, size_t* length,
                                              const char* cache_dir);

/* One entry of a cache list; owned by its list. */
typedef struct attnjit_cache_entry {
  const char* arch;         /* "sm_90" */
  const char* cuda_version; /* of the NVRTC that compiled it: "13.0" */
  const char* name;         /* file name without extension: "bf16-d128-<key>" */
  const char* key;
  const char* binary_path;  /* "" when the sidecar cannot say */
  const char* sidecar_path;
  const char* summary;      /* the variant it holds, or why that is unknown */
  uint64_t size_bytes;      /* of the binary */
  int64_t age_seconds;      /* since it was created */
  int64_t unused_seconds;   /* since it was last stored or loaded */
  const char* problem;      /* attnjit_cache_verify only: NULL when sound, else why the loader
                               refuses it; always NULL in attnjit_cache_list_create's lists */
} attnjit_cache_entry;

typedef struct attnjit_cache_list attnjit_cache_list;

#define ATTNJIT_CACHE_LIST_OPTIONS_VERSION 1
typedef struct attnjit_cache_list_options {
  int version;           /* ATTNJIT_CACHE_LIST_OPTIONS_VERSION */
  const char* cache_dir; /* NULL: the default */
  const char* arch;      /* NULL: every arch; else only this one (validated) */
} attnjit_cache_list_options;

ATTNJIT_API void attnjit_cache_list_options_init(attnjit_cache_list_options* options);
/* The entries, sorted by arch, CUDA version, name. A missing cache has none. */
ATTNJIT_API attnjit_status attnjit_cache_list_create(attnjit_cache_list** out,
                                                     const attnjit_cache_list_options* options);
/* Every entry checked as the loader checks it (sizes, checksums, ownership, symlinks): the list
 * holds every entry (the arch filter applies), each with its `problem`; *num_bad (optional)
 * receives how many have one. A damaged entry is recompiled on its next use. */
ATTNJIT_API attnjit_status attnjit_cache_verify(attnjit_cache_list** out, size_t* num_bad,
                                                const attnjit_cache_list_options* options);
ATTNJIT_API size_t attnjit_cache_list_count(const attnjit_cache_list* list); /* 0 for NULL */
/* NULL when index >= count. */
ATTNJIT_API const attnjit_cache_entry* attnjit_cache_list_entry(const attnjit_cache_list* list,
                                                                size_t index);
ATTNJIT_API void attnjit_cache_list_destroy(attnjit_cache_list* list);

#define ATTNJIT_CACHE_CLEAR_OPTIONS_VERSION 1
typedef struct attnjit_cache_clear_options {
  int version;           /* ATTNJIT_CACHE_CLEAR_OPTIONS_VERSION */
  const char* cache_dir; /* NULL: the default */
  const char* arch;      /* NULL: every arch */
  int64_t older_than_seconds; /* < 0 (the default): any age; else only entries this old */
  int64_t max_bytes;    /* < 0 (the default): no limit; else remove the least recently used of
                           the selected entries until their binaries fit in this many bytes */
} attnjit_cache_clear_options;

typedef struct attnjit_cache_clear_result {
  uint64_t entries; /* entries removed */
  uint64_t files;   /* files removed, temporaries, locks and orphans included */
  uint64_t bytes;
} attnjit_cache_clear_result;

ATTNJIT_API void attnjit_cache_clear_options_init(attnjit_cache_clear_options* options);
/* With no filter set, removes everything in the cache's entry directories. out is caller-owned
 * and may be NULL. */
ATTNJIT_API attnjit_status attnjit_cache_clear(attnjit_cache_clear_result* out,
                                               const attnjit_cache_clear_options* options);

/* ---- Prewarm ---- */

/* One kernel of a prewarm: owned by its report (or, in a progress callback, valid during the
 * call only). */
typedef struct attnjit_prewarm_result {
  const char* name; /* the manifest's variant name */
  attnjit_dtype dtype;
  int head_dim;
  const char* arch;
  attnjit_status status;        /* ATTNJIT_OK when the kernel is in the cache */
  attnjit_kernel_origin origin; /* when status is ATTNJIT_OK */
  const char* error;            /* NULL when status is ATTNJIT_OK, else why it failed */
  int not_stored; /* 1: compiled, but the cache could not keep it (a failure, status
                     ATTNJIT_ERROR_CACHE) */
} attnjit_prewarm_result;

/* Called once per kernel as it finishes, from worker threads but never two at a time. */
typedef void (*attnjit_prewarm_progress_fn)(void* user_data, size_t done, size_t total,
                                            const attnjit_prewarm_result* result);

#define ATTNJIT_PREWARM_OPTIONS_VERSION 1
typedef struct attnjit_prewarm_options {
  int version;               /* ATTNJIT_PREWARM_OPTIONS_VERSION */
  const char* manifest_path; /* NULL: the embedded standard manifest */
  const char* const* arches; /* each validated; duplicates are compiled once */
  size_t num_arches;         /* at least 1 */
  const char* cache_dir;     /* NULL: the default */
  int jobs;                  /* parallel compiles; 0: one per core */
  attnjit_prewarm_progress_fn progress; /* optional */
  void* user_data;                      /* passed to progress */
} attnjit_prewarm_options;

typedef struct attnjit_prewarm_report attnjit_prewarm_report;

ATTNJIT_API void attnjit_prewarm_options_init(attnjit_prewarm_options* options);
/* Compiles every variant x dtype x head dim x arch of the manifest into the cache. A bad
 * manifest, arch or unusable cache fails the call before anything is compiled; otherwise the
 * call returns ATTNJIT_OK with one result per kernel (variant order, then arch), and a kernel
 * that failed is a result with its status, not a failed call. */
ATTNJIT_API attnjit_status attnjit_prewarm(attnjit_prewarm_report** out,
                                           const attnjit_prewarm_options* options);
ATTNJIT_API size_t attnjit_prewarm_report_count(const attnjit_prewarm_report* report);
ATTNJIT_API size_t attnjit_prewarm_report_failures(const attnjit_prewarm_report* report);
/* NULL when index >= count. */
ATTNJIT_API const attnjit_prewarm_result* attnjit_prewarm_report_result(
    const attnjit_prewarm_report* report, size_t index);
ATTNJIT_API void attnjit_prewarm_report_destroy(attnjit_prewarm_report* report);

/* ---- Declarations as text ----
 * The spelling the CLI and manifests use: parameters "W:int", "cap:float"; tensors
 * "doc:int32[1]", "bias:float32[2]". */

/* Owned by its attnjit_signature_parse result; the arrays are in the order given. */
typedef struct attnjit_signature {
  const attnjit_param_decl* params;
  int num_params;
  const attnjit_tensor_decl* tensors;
  int num_tensors;
} attnjit_signature;

/* Parses and validates every declaration (names, types, ranks, counts, clashes); a bad one gives
 * ATTNJIT_ERROR_INVALID_ARGUMENT naming it. The result's decls fit attnjit_variant_desc. */
ATTNJIT_API attnjit_status attnjit_signature_parse(attnjit_signature** out,
                                                   const char* const* params, int num_params,
                                                   const char* const* tensors, int num_tensors);
ATTNJIT_API void attnjit_signature_destroy(attnjit_signature* signature);

/* ---- Expressions ---- */

/* What attnjit makes of a variant's expressions before any kernel exists: their canonical form
 * and the CUDA bodies they are lowered to (the text that `attnjit check` prints). Owned by its
 * attnjit_expressions_lower result. */
typedef struct attnjit_lowered_expressions {
  const char* canonical_mask;
  const char* canonical_score;
  int mask_reads_tensors; /* 1: tiles are classified per call; 0: from indices alone */
  const char* mask_body;     /* mask(args, b, h, q_idx, kv_idx, q_len, kv_len, num_heads) */
  const char* score_body;    /* score(args, score, b, h, q_idx, kv_idx, q_len, kv_len, ...) */
  const char* classify_body; /* classify(args, tile) -> TileClass */
} attnjit_lowered_expressions;

/* Uses desc's mask, score, params and tensors (not dtype or head_dim) and needs no runtime. Both
 * expressions are checked before it returns: when either does not parse or type-check, the
 * status is ATTNJIT_ERROR_PARSE and the message holds every expression's error, one after the
 * other. */
ATTNJIT_API attnjit_status attnjit_expressions_lower(attnjit_lowered_expressions** out,
                                                     const attnjit_variant_desc* desc);
ATTNJIT_API void attnjit_lowered_expressions_destroy(attnjit_lowered_expressions* lowered);

/* ---- Checking a call on the host ----
 * Both take a call as attnjit_forward takes it, with the same checks, and read its per-call
 * tensors from host memory. The census reads nothing else, so q, k, v and out may be device
 * pointers there; the reference reads q, k and v, which must be host memory. Neither writes
 * args->out or args->lse. */

/* How a variant's mask splits one call's attention matrix into tiles: for each batch and query
 * head, every tile_q x tile_kv tile is empty (skipped), full or partial, as the kernel's tile
 * classification sees it; kept_pairs counts the (query, key) pairs the mask keeps, exactly. A
 * call whose kernel packs a GQA group's query heads into its blocks' rows (a decoding or
 * speculative step) has tile_q = the whole queries of each head a block holds (a block's rows
 * over the group). */
typedef struct attnjit_tile_census {
  int tile_q, tile_kv;
  int64_t tiles, empty, partial, full;
  int64_t kept_pairs, total_pairs;
} attnjit_tile_census;

#define ATTNJIT_TILE_CENSUS_OPTIONS_VERSION 1
typedef struct attnjit_tile_census_options {
  int version;      /* ATTNJIT_TILE_CENSUS_OPTIONS_VERSION */
  const char* arch; /* the tiles of the kernel chosen for this arch; NULL: the tiles of the
                       kernel the call runs on (attnjit_variant_launch_plan's: on a GPU runtime
                       this compiles or loads it), or the CPU reference's */
} attnjit_tile_census_options;

ATTNJIT_API void attnjit_tile_census_options_init(attnjit_tile_census_options* options);
/* options may be NULL for the defaults. Costs one classification per tile plus one mask
 * evaluation per element of each partial tile. out is caller-owned. A call with sequence tables
 * (q_seq_starts ...) is refused, here, in attnjit_variant_tile_map and in
 * attnjit_variant_reference: examine each sequence as a call of its own (batch 1, its lengths). */
ATTNJIT_API attnjit_status attnjit_variant_tile_census(attnjit_tile_census* out,
                                                       attnjit_variant* variant,
                                                       const attnjit_forward_args* args,
                                                       const attnjit_tile_census_options* options);

/* The class of a tile in attnjit_variant_tile_map. */
typedef enum attnjit_tile_class {
  ATTNJIT_TILE_EMPTY = 0,  /* every pair masked out: the kernel never loads the tile */
  ATTNJIT_TILE_FULL = 1,   /* every pair kept: the kernel skips the mask */
  ATTNJIT_TILE_PARTIAL = 2 /* mixed, or not provably either: the mask per element */
} attnjit_tile_class;

/* The block sparsity of one (batch, query head) of a call: the class of each of its tiles, as
 * the census classifies them (same tiles, same options), row-major in map[rows * cols]: rows =
 * ceil(q_len / tile_q) query tiles of cols = ceil(kv_len / tile_kv) key tiles, one
 * attnjit_tile_class per byte. *rows and *cols are always set; with map NULL nothing else is
 * written (ask for the size first), and a capacity below rows * cols is
 * ATTNJIT_ERROR_INVALID_ARGUMENT, as is a batch or head out of range. tile_q and tile_kv may be
 * NULL; when not, they receive the tile size. */
ATTNJIT_API attnjit_status attnjit_variant_tile_map(unsigned char* map, size_t capacity,
                                                    int* rows, int* cols, int* tile_q,
                                                    int* tile_kv, attnjit_variant* variant,
                                                    const attnjit_forward_args* args, int batch,
                                                    int head,
                                                    const attnjit_tile_census_options* options);

/* What attnjit_forward would launch for a call, and why, without launching it: which of the
 * variant's kernels runs it (its own; on sm_90a the sm80 kernel for a call TMA cannot load or
 * for a decoding step, the split kernel for a call of too few query tiles to fill the GPU, or
 * the short-rows kernel for short rows), the launched entry's tiles and
 * grid, split-KV and packed GQA, the tensor-summary launches. The kernel engineer's answer to
 * "which kernel did this call run": forward makes the same choice for the same call (the
 * short-rows rule remembers it). Filled by attnjit_variant_launch_plan; strings are static. */
#define ATTNJIT_LAUNCH_PLAN_VERSION 1
typedef struct attnjit_launch_plan {
  int version;               /* ATTNJIT_LAUNCH_PLAN_VERSION: attnjit_launch_plan_init sets it */
  attnjit_backend backend;   /* CUDA or CPU; on the CPU only kernel and reason are set */
  const char* kernel_family; /* "sm80" or "sm90"; "" on the CPU */
  const char* kernel;        /* "standard" (the variant's kernel for the arch), "tma_fallback",
                                "decoding", "split_kv", "short_rows", "paged_kv", "varlen";
                                "reference" on the CPU */
  const char* entry;         /* the launched entry point: "attnjit_fwd", "attnjit_fwd_decode" */
  char reason[256];          /* why, in words, always NUL-terminated; a longer one is cut at
                                252 characters and ends in "...": attnjit_variant_launch_reason
                                gives it whole */
  int block_m, block_n, num_warps, blocks_per_sm; /* the launched entry's tiles */
  unsigned grid_x, grid_y, threads, dynamic_smem_bytes;
  int gqa_group;        /* query heads packed into one block's rows per key/value head (1: not) */
  int num_splits;       /* key slices, merged by a second launch (1: not split); balanced:
                           slices a sequence has on average */
  int split_tiles;      /* key tiles per slice (0 when not split, or when balanced: the slices
                           sized on the device to each sequence's key count) */
  int summary_launches; /* tensor-summary kernels launched before the forward one */
  size_t scratch_bytes; /* device scratch the call takes (summaries, split partials) */
} attnjit_launch_plan;

ATTNJIT_API void attnjit_launch_plan_init(attnjit_launch_plan* plan);
/* out must come from attnjit_launch_plan_init. Checks the call as attnjit_forward does (shapes,
 * dtypes, strides, per-call values), except the buffers' memory, which only a launch can check;
 * compiles or loads the kernels the choice needs, as attnjit_forward would. */
ATTNJIT_API attnjit_status attnjit_variant_launch_plan(attnjit_launch_plan* out,
                                                       attnjit_variant* variant,
                                                       const attnjit_forward_args* args);
/* The launch plan's reason whole, for the reasons that do not fit its 256 characters (a
 * variable-length decoding step on sm_90a explains its kernel, entry, packing and split). As
 * attnjit_cache_path: *length receives the reason's length without its NUL; the reason and its
 * NUL are copied when capacity > *length, else ATTNJIT_ERROR_INVALID_ARGUMENT is returned and
 * buffer is left untouched (pass NULL and 0 to ask for the length). Plans the call as
 * attnjit_variant_launch_plan does. */
ATTNJIT_API attnjit_status attnjit_variant_launch_reason(char* buffer, size_t capacity,
                                                         size_t* length, attnjit_variant* variant,
                                                         const attnjit_forward_args* args);

/* The naive reference: every element evaluated directly, in double precision (the score
 * expression in fp32, as the kernels evaluate it), single-threaded; for checking a result.
 * out receives [batch, num_heads_q, q_len, head_dim] doubles, contiguous; lse (optional)
 * [batch, num_heads_q, q_len], -inf for rows with nothing kept (whose output is zero). */
ATTNJIT_API attnjit_status attnjit_variant_reference(attnjit_variant* variant,
                                                     const attnjit_forward_args* args,
                                                     double* out, double* lse);

/* ---- Manifests ----
 * A manifest names the variants a deployment uses (the file format is in the README). */

/* One variant of a manifest; owned by its manifest. */
typedef struct attnjit_manifest_variant {
  const char* name;
  const char* mask;  /* as written: "" for the default */
  const char* score; /* as written: "" for the default */
  const attnjit_param_decl* params;
  int num_params;
  const attnjit_tensor_decl* tensors;
  int num_tensors;
  const attnjit_dtype* dtypes; /* the dtypes and head dims it is compiled for */
  int num_dtypes;
  const int* head_dims;
  int num_head_dims;
  const char* example_json; /* its "example" object as JSON text; "{}" when it has none */
  int paged_kv; /* 1: its calls may read a paged key/value cache ("paged_kv": true), and prewarm
                   compiles the kernel of such calls too */
} attnjit_manifest_variant;

typedef struct attnjit_manifest attnjit_manifest;

/* path NULL: the embedded standard manifest. A file is read and checked as attnjit_prewarm
 * reads it: a bad one fails with a message naming the field. */
ATTNJIT_API attnjit_status attnjit_manifest_load(attnjit_manifest** out, const char* path);
/* Where it came from: the file's path, or a name for the embedded one. "" for NULL. */
ATTNJIT_API const char* attnjit_manifest_source(const attnjit_manifest* manifest);
ATTNJIT_API size_t attnjit_manifest_count(const attnjit_manifest* manifest); /* 0 for NULL */
/* NULL when index >= count. */
ATTNJIT_API const attnjit_manifest_variant* attnjit_manifest_variant_at(
    const attnjit_manifest* manifest, size_t index);
ATTNJIT_API void attnjit_manifest_destroy(attnjit_manifest* manifest);

/* ---- Small helpers for tools ---- */

/* The arches kernels can be compiled for: "sm_80, sm_86, sm_89, sm_90, sm_90a". */
ATTNJIT_API const char* attnjit_supported_arches(void);
/* The arch of the runtime's GPU ("sm_90"); "" on the CPU backend or for NULL. */
ATTNJIT_API const char* attnjit_runtime_device_arch(const attnjit_runtime* runtime);
/* `text` made safe to print on a terminal, as attnjit's own messages quote file contents: every
 * byte outside printable ASCII becomes \xNN (line breaks too, unless keep_line_breaks). Like
 * snprintf: writes at most capacity bytes including the NUL (nothing when capacity is 0) and
 * returns the length of the whole result. text NULL reads as "". */
ATTNJIT_API size_t attnjit_printable(char* buffer, size_t capacity, const char* text,
                                     int keep_line_breaks);

#ifdef __cplusplus
}
#endif

#endif /* ATTNJIT_ATTNJIT_H */
