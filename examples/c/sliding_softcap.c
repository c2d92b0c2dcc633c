/* A custom attention variant through attnjit's C API: each query sees the last W keys (a sliding
 * window) and every score is soft-capped (cap * tanh(score / cap)); W and cap are passed at each
 * call. Runs on the GPU, with device memory from the CUDA Driver API, when there is one; else on
 * the CPU backend with host memory.
 *
 * The inputs make the answer easy to check: every query and key is the same vector, so every kept
 * pair has the same score s, and row j of the values holds j. Output row i is then the mean of the
 * positions in its window, and its log-sum-exp is cap * tanh(s / cap) + log(window size).
 *
 * Build: see CMakeLists.txt (find_package) or Makefile (pkg-config). */
#include <attnjit/attnjit.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HEADS = 2, LEN = 64, DIM = 64, WINDOW = 16 };
static const float CAP = 2.0f;

/* On an error the program prints why and exits, which frees everything. */
#define CHECK(call)                                                          \
  do {                                                                       \
    attnjit_status status_ = (call);                                         \
    if (status_ != ATTNJIT_OK) {                                             \
      fprintf(stderr, "%s: %s: %s\n", #call, attnjit_status_string(status_), \
              attnjit_last_error());                                         \
      return 1;                                                              \
    }                                                                        \
  } while (0)
#define CHECK_CU(call)                                        \
  do {                                                        \
    int result_ = (call);                                     \
    if (result_ != 0) {                                       \
      fprintf(stderr, "%s: CUDA error %d\n", #call, result_); \
      return 1;                                               \
    }                                                         \
  } while (0)

/* bf16 from and to float on the host, rounding to nearest even. */
static uint16_t to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
static float from_bf16(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* The Driver API calls this program makes, taken from the driver at run time: linking libcuda
 * would stop the program from starting where there is no driver. attnjit loads the same library
 * ($ATTNJIT_CUDA_DRIVER, else libcuda.so.1). The _v2 names are the ABI that cuda.h selects. */
typedef unsigned long long DevicePtr; /* CUdeviceptr */
typedef struct Driver {
  int (*init)(unsigned);
  int (*device_get)(int*, int);
  int (*primary_ctx_retain)(void**, int);
  int (*primary_ctx_release)(int);
  int (*ctx_set_current)(void*);
  int (*mem_alloc)(DevicePtr*, size_t);
  int (*mem_free)(DevicePtr);
  int (*memcpy_htod)(DevicePtr, const void*, size_t);
  int (*memcpy_dtoh)(void*, DevicePtr, size_t);
} Driver;

static int load_driver(Driver* d) {
  const struct {
    const char* symbol;
    void* slot;
  } table[] = {{"cuInit", &d->init},
               {"cuDeviceGet", &d->device_get},
               {"cuDevicePrimaryCtxRetain", &d->primary_ctx_retain},
               {"cuDevicePrimaryCtxRelease_v2", &d->primary_ctx_release},
               {"cuCtxSetCurrent", &d->ctx_set_current},
               {"cuMemAlloc_v2", &d->mem_alloc},
               {"cuMemFree_v2", &d->mem_free},
               {"cuMemcpyHtoD_v2", &d->memcpy_htod},
               {"cuMemcpyDtoH_v2", &d->memcpy_dtoh}};
  const char* path = getenv("ATTNJIT_CUDA_DRIVER");
  void* lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
    void* function = dlsym(lib, table[i].symbol);
    if (!function) {
      fprintf(stderr, "the CUDA driver lacks %s\n", table[i].symbol);
      return 1;
    }
    memcpy(table[i].slot, &function, sizeof function); /* ISO C has no void* to function cast */
  }
  return 0;
}

/* Copies q, k, v to the device, runs the variant there and copies out and lse back. */
static int forward_on_gpu(attnjit_variant* variant, attnjit_forward_args args, size_t io_bytes,
                          size_t lse_bytes) {
  Driver cu;
  int device;
  void* context;
  DevicePtr q, k, v, out, lse;
  if (load_driver(&cu)) return 1;
  CHECK_CU(cu.init(0));
  CHECK_CU(cu.device_get(&device, 0));
  CHECK_CU(cu.primary_ctx_retain(&context, device));
  CHECK_CU(cu.ctx_set_current(context)); /* attnjit works in the caller's current context */
  CHECK_CU(cu.mem_alloc(&q, io_bytes));
  CHECK_CU(cu.mem_alloc(&k, io_bytes));
  CHECK_CU(cu.mem_alloc(&v, io_bytes));
  CHECK_CU(cu.mem_alloc(&out, io_bytes));
  CHECK_CU(cu.mem_alloc(&lse, lse_bytes));
  CHECK_CU(cu.memcpy_htod(q, args.q, io_bytes));
  CHECK_CU(cu.memcpy_htod(k, args.k, io_bytes));
  CHECK_CU(cu.memcpy_htod(v, args.v, io_bytes));
  void* host_out = args.out;
  float* host_lse = args.lse;
  args.q = (const void*)q;
  args.k = (const void*)k;
  args.v = (const void*)v;
  args.out = (void*)out;
  args.lse = (float*)lse;
  CHECK(attnjit_forward(variant, &args));            /* asynchronous, on the default stream */
  CHECK_CU(cu.memcpy_dtoh(host_out, out, io_bytes)); /* waits for the kernel */
  CHECK_CU(cu.memcpy_dtoh(host_lse, lse, lse_bytes));
  CHECK_CU(cu.mem_free(q));
  CHECK_CU(cu.mem_free(k));
  CHECK_CU(cu.mem_free(v));
  CHECK_CU(cu.mem_free(out));
  CHECK_CU(cu.mem_free(lse));
  CHECK_CU(cu.primary_ctx_release(device));
  return 0;
}

static uint16_t q[HEADS * LEN * DIM], k[HEADS * LEN * DIM], v[HEADS * LEN * DIM];
static uint16_t out[HEADS * LEN * DIM];
static float lse[HEADS * LEN];

int main(void) {
  for (int h = 0; h < HEADS; ++h) {
    for (int j = 0; j < LEN; ++j) {
      for (int d = 0; d < DIM; ++d) {
        const int at = (h * LEN + j) * DIM + d; /* layout BHLD: [batch, head, row, dim] */
        q[at] = k[at] = to_bf16(1.0f);
        v[at] = to_bf16((float)j);
      }
    }
  }

  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options); /* backend AUTO: the GPU if usable, else the CPU */
  attnjit_runtime* runtime;
  CHECK(attnjit_runtime_create(&runtime, &options));
  const int on_gpu = attnjit_runtime_backend(runtime) == ATTNJIT_BACKEND_CUDA;

  const attnjit_param_decl params[] = {{"W", ATTNJIT_PARAM_INT}, {"cap", ATTNJIT_PARAM_FLOAT}};
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  desc.score = "cap * tanh(score / cap)";
  desc.params = params;
  desc.num_params = 2;
  desc.dtype = ATTNJIT_DTYPE_BF16;
  desc.head_dim = DIM;
  attnjit_variant* variant;
  CHECK(attnjit_variant_create(&variant, runtime, &desc));
  CHECK(attnjit_variant_prepare(variant)); /* compiles, or loads the kernel from the cache */

  attnjit_scalar values[2];
  values[0].i = WINDOW;
  values[1].f = CAP;
  attnjit_forward_args args;
  attnjit_forward_args_init(&args);
  args.q = q;
  args.k = k;
  args.v = v;
  args.out = out;
  args.lse = lse;
  args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_BF16;
  args.batch = 1;
  args.num_heads_q = args.num_heads_kv = HEADS;
  args.q_len = args.kv_len = LEN;
  args.layout = ATTNJIT_LAYOUT_BHLD;
  args.params = values;
  args.num_params = 2;
  if (on_gpu) {
    if (forward_on_gpu(variant, args, sizeof q, sizeof lse)) return 1;
  } else {
    CHECK(attnjit_forward(variant, &args));
  }

  printf("attnjit %s, backend %s\n", attnjit_version(), on_gpu ? "cuda" : "cpu");
  const float score = CAP * tanhf(8.0f / CAP); /* 1/sqrt(64) * (64 ones . 64 ones) = 8 */
  int bad = 0;
  for (int h = 0; h < HEADS; ++h) {
    for (int i = 0; i < LEN; ++i) {
      const int first = i - WINDOW + 1 > 0 ? i - WINDOW + 1 : 0;
      const float want_out = 0.5f * (float)(first + i);
      const float want_lse = score + logf((float)(i - first + 1));
      const float got_lse = lse[h * LEN + i];
      float got_out = 0.0f;
      int ok = fabsf(got_lse - want_lse) < 0.01f;
      for (int d = 0; d < DIM && ok; ++d) { /* stops at the first wrong element */
        got_out = from_bf16(out[(h * LEN + i) * DIM + d]);
        ok = fabsf(got_out - want_out) < 0.05f;
      }
      bad += !ok;
      if (h == 0 && (i < 2 || i == WINDOW || i == LEN - 1 || !ok)) {
        printf("row %2d: keys %2d..%2d  out %6.2f (want %6.2f)  lse %.4f (want %.4f)%s\n", i, first,
               i, got_out, want_out, got_lse, want_lse, ok ? "" : "  MISMATCH");
      }
    }
  }
  if (bad) {
    printf("%d of %d rows differ\n", bad, HEADS * LEN);
  } else {
    printf("all %d rows match\n", HEADS * LEN);
  }

  attnjit_variant_destroy(variant);
  attnjit_runtime_destroy(runtime);
  return bad ? 1 : 0;
}
