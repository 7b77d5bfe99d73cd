/* Scale: a document of 100,000 policies (about 3 MB, generated here) loads, and every
 * name lists by index in well under a second (index access is O(1); it was O(n), 37 s
 * for this document). Not under valgrind (it would time valgrind, not the library).
 * Prints the measured times; exit status 0 when every check passed. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "retryrs.h"

#define N 100000

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void) {
  /* {"policies": {"p000000": {"max_attempts": 3}, ...}}: keys sort as they are written. */
  const char *entry = "\"p%06d\": {\"max_attempts\": %d, \"initial_delay\": \"%dms\"}";
  size_t cap = (size_t)N * 64 + 64, len = 0;
  char *json = malloc(cap), want[16];
  retryrs_policies *p = NULL;
  retryrs_config c;
  double t0, load_s, list_s;
  int failures = 0, i;
  if (!json) return 2;
  len += (size_t)snprintf(json + len, cap - len, "{\"policies\": {");
  for (i = 0; i < N; i++) {
    len += (size_t)snprintf(json + len, cap - len, entry, i, 1 + i % 7, i % 1000);
    if (i + 1 < N) json[len++] = ',';
  }
  len += (size_t)snprintf(json + len, cap - len, "}}");

  t0 = now_s();
  if (retryrs_policies_from_json(json, len, &p) != RETRYRS_OK) {
    fprintf(stderr, "scale: the document did not load: %s\n", retryrs_last_error());
    return 1;
  }
  load_s = now_s() - t0;
  if (retryrs_policies_count(p) != N) {
    fprintf(stderr, "scale: %zu policies, expected %d\n", retryrs_policies_count(p), N);
    failures++;
  }

  t0 = now_s();
  for (i = 0; i < N; i++) {
    const char *name = retryrs_policies_name(p, (size_t)i);
    snprintf(want, sizeof want, "p%06d", i);
    if (!name || strcmp(name, want) != 0) {
      if (failures++ < 5) fprintf(stderr, "scale: name %d is %s, expected %s\n", i, name ? name : "NULL", want);
    }
  }
  list_s = now_s() - t0;
  if (retryrs_policies_name(p, N) != NULL) failures++;

  /* Lookups by name still find each policy's own values. */
  for (i = 0; i < N; i += 9973) {
    snprintf(want, sizeof want, "p%06d", i);
    retryrs_config_default(&c);
    if (retryrs_policies_get(p, want, &c) != RETRYRS_OK || c.max_attempts != (uint64_t)(1 + i % 7) ||
        c.initial_delay_ms != (double)(i % 1000)) {
      fprintf(stderr, "scale: lookup of %s: %s\n", want, retryrs_last_error());
      failures++;
    }
  }
  retryrs_policies_free(p);
  free(json);

  printf("scale: %d policies (%zu bytes) loaded in %.3f s, all names listed by index in %.4f s\n", N, len, load_s,
         list_s);
  /* Far above the measured time (milliseconds), far below the 37 s of O(n) index access:
   * a bound a loaded machine keeps. */
  if (list_s >= 5.0) {
    fprintf(stderr, "scale: listing took %.3f s, expected well under a second\n", list_s);
    failures++;
  }
  return failures == 0 ? 0 : 1;
}
