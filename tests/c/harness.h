/* A plain test harness: CHECK() records a failed expectation without stopping the test;
 * h_run() runs one test function; h_summary() prints "N passed, N failed" as the last
 * line and returns the failure count. Usable from C and C++. */
#ifndef RETRYRS_TESTS_HARNESS_H
#define RETRYRS_TESTS_HARNESS_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

extern int h_current_failures;
void h_run(const char *name, void (*test)(void));
void h_record(const char *name, int ok);
int h_summary(void);

#ifdef __cplusplus
}
#endif

#define CHECK(cond)                                                               \
  do {                                                                            \
    if (!(cond)) {                                                                \
      h_current_failures++;                                                       \
      fprintf(stderr, "  %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                             \
  } while (0)

/* A status check that also shows the library's message when it fails. */
#define CHECK_STATUS(expr, expected)                                                      \
  do {                                                                                    \
    retryrs_status check_status_got_ = (expr);                                            \
    if (check_status_got_ != (expected)) {                                                \
      h_current_failures++;                                                               \
      fprintf(stderr, "  %s:%d: %s returned %s, expected %s (last error: %s)\n", __FILE__, \
              __LINE__, #expr, retryrs_status_name(check_status_got_),                    \
              retryrs_status_name(expected), retryrs_last_error());                       \
    }                                                                                     \
  } while (0)

#endif
