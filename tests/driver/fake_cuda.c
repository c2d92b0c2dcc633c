/* A stand-in libcuda.so for the driver loader's CPU tests: it exports cuInit, whose result
 * comes from $ATTNJIT_FAKE_CUINIT (default 0, success), the error-text and version queries and a
 * cuGetProcAddress_v2 that knows one function. Everything else is missing, so calling it must
 * give an error, never a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

FAKE_EXPORT int cuInit(unsigned int flags) {
  const char* result = getenv("ATTNJIT_FAKE_CUINIT");
  (void)flags;
  return result != NULL ? atoi(result) : 0;
}

FAKE_EXPORT int cuDriverGetVersion(int* version) {
  *version = 13000;
  return 0;
}

FAKE_EXPORT int cuGetErrorName(int error, const char** name) {
  switch (error) {
    case 0: *name = "CUDA_SUCCESS"; return 0;
    case 2: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return 0;
    default: *name = NULL; return 1;
  }
}

FAKE_EXPORT int cuGetErrorString(int error, const char** text) {
  switch (error) {
    case 0: *text = "no error"; return 0;
    case 2: *text = "out of memory"; return 0;
    case 100: *text = "no CUDA-capable device is detected"; return 0;
    default: *text = NULL; return 1;
  }
}

/* cuGetProcAddress_v2 (CUDA 12.0+ ABI): records every request as "symbol@version/flags;" (read
 * back with fake_proc_requests) and knows only cuCtxSynchronize, at the pinned version 2000, so the
 * loader's pinned versions and its dlsym fallback can both be checked. */
static char requests[8192];

static int fake_ctx_synchronize(void) { return 0; }

FAKE_EXPORT const char* fake_proc_requests(void) { return requests; }

FAKE_EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                    unsigned long long flags, int* status) {
  char entry[128];
  snprintf(entry, sizeof entry, "%s@%d/%llu;", symbol, version, flags);
  strncat(requests, entry, sizeof requests - strlen(requests) - 1);
  *pfn = NULL;
  if (strcmp(symbol, "cuCtxSynchronize") == 0 && version >= 2000 && version < 13000) {
    *pfn = (void*)&fake_ctx_synchronize;
  }
  if (status != NULL) *status = *pfn != NULL ? 0 : 1; /* SUCCESS : SYMBOL_NOT_FOUND */
  return 0;
}
