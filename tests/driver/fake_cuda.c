/* A stand-in libcuda.so for the driver loader's CPU tests: it exports only cuInit, whose result
 * comes from $ATTNJIT_FAKE_CUINIT (default 0, success), and the error-text and version queries.
 * Everything else is missing, so calling it must give an error, never a crash. */
#include <stdlib.h>

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
