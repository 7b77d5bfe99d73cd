#include "harness.h"

int h_current_failures;
static int passed, failed;

void h_record(const char *name, int ok) {
  if (ok) {
    passed++;
  } else {
    failed++;
    fprintf(stderr, "FAIL %s\n", name);
  }
}

void h_run(const char *name, void (*test)(void)) {
  h_current_failures = 0;
  test();
  h_record(name, h_current_failures == 0);
}

int h_summary(void) {
  fflush(stderr);
  printf("%d passed, %d failed\n", passed, failed);
  fflush(stdout);
  return failed;
}
