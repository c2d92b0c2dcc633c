/* The small helpers tools use, from C: the supported arches, the runtime's device arch, text
 * made printable, the log level. Exits 0 on success. */
#include <stdio.h>
#include <string.h>

#include "attnjit/attnjit.h"
#include "check.h"

static void test_supported_arches_and_device_arch(void) {
  CHECK(contains(attnjit_supported_arches(), "sm_80"));
  CHECK(contains(attnjit_supported_arches(), "sm_90"));
  CHECK(contains(attnjit_supported_arches(), "sm_90a"));
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = ATTNJIT_BACKEND_CPU;
  attnjit_runtime* runtime = NULL;
  CHECK(attnjit_runtime_create(&runtime, &options) == ATTNJIT_OK);
  CHECK(strcmp(attnjit_runtime_device_arch(runtime), "") == 0);
  CHECK(strcmp(attnjit_runtime_device_arch(NULL), "") == 0);
  attnjit_runtime_destroy(runtime);
}

static void test_printable(void) {
  char buffer[64];
  CHECK(attnjit_printable(buffer, sizeof buffer, "ok name", 0) == 7);
  CHECK(strcmp(buffer, "ok name") == 0);
  CHECK(attnjit_printable(buffer, sizeof buffer, "a\x1b[2Jb\nc", 0) == 14);
  CHECK(strcmp(buffer, "a\\x1b[2Jb\\x0ac") == 0);
  CHECK(attnjit_printable(buffer, sizeof buffer, "b\nc", 1) == 3);
  CHECK(strcmp(buffer, "b\nc") == 0);
  /* Like snprintf: the whole length is returned, the copy is cut to fit with its NUL. */
  CHECK(attnjit_printable(buffer, 4, "\x01\x02", 0) == 8);
  CHECK(strcmp(buffer, "\\x0") == 0);
  CHECK(attnjit_printable(NULL, 0, "abc", 0) == 3);
  CHECK(attnjit_printable(buffer, sizeof buffer, NULL, 0) == 0 && buffer[0] == '\0');
}

static void test_set_log_level(void) {
  CHECK(attnjit_set_log_level(ATTNJIT_LOG_DEFAULT) == ATTNJIT_OK);
  CHECK(attnjit_set_log_level(ATTNJIT_LOG_OFF) == ATTNJIT_OK);
  CHECK(attnjit_set_log_level(ATTNJIT_LOG_ERROR) == ATTNJIT_OK);
  CHECK(attnjit_set_log_level((attnjit_log_level)42) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(attnjit_last_error(), "42"));
}

int main(void) {
  test_supported_arches_and_device_arch();
  test_printable();
  test_set_log_level();
  return check_summary();
}
