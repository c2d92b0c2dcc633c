/* What the C programs testing the C API share: a CHECK that counts and reports, and the file
 * helpers the cache tests need. Each test program is one translation unit. Exit with
 * check_summary(). */
#ifndef ATTNJIT_TESTS_CAPI_CHECK_H
#define ATTNJIT_TESTS_CAPI_CHECK_H

#include <stdio.h>
#include <string.h>

#include "attnjit/attnjit.h"

static int passed = 0;
static int failed = 0;

#define CHECK(cond)                                                                         \
  do {                                                                                      \
    if (cond) {                                                                             \
      ++passed;                                                                             \
    } else {                                                                                \
      ++failed;                                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
              attnjit_last_error());                                                        \
    }                                                                                       \
  } while (0)

/* 1 when `text` is not NULL and contains `part`. */
static inline int contains(const char* text, const char* part) {
  return text != NULL && strstr(text, part) != NULL;
}

static inline int check_summary(void) {
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

#endif /* ATTNJIT_TESTS_CAPI_CHECK_H */
