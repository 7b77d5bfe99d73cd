/* Loading a 10,000-policy document in C: retryrs_policies_from_json (parse, validate,
 * build) against building the same number of retriers by hand from
 * retryrs_config_default (what a C service does without a document), in the same run.
 * Prints one markdown row. Usage: policies DOC */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "retryrs.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define RUNS 15
#define N 10001

int main(int argc, char **argv) {
  static retryrs_retrier *retriers[N];
  double ours[RUNS], peer[RUNS];
  char *text;
  long len;
  int run;
  size_t i;
  FILE *f = argc == 2 ? fopen(argv[1], "rb") : NULL;
  if (!f) return 2;
  fseek(f, 0, SEEK_END);
  len = ftell(f);
  rewind(f);
  text = malloc((size_t)len);
  if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) return 2;
  fclose(f);
  for (run = 0; run < RUNS; run++) {
    retryrs_policies *p = NULL;
    retryrs_config c;
    double t = now_ms();
    if (retryrs_policies_from_json(text, (size_t)len, &p) != RETRYRS_OK || retryrs_policies_count(p) != N) {
      fprintf(stderr, "%s\n", retryrs_last_error());
      return 1;
    }
    ours[run] = now_ms() - t;
    retryrs_policies_free(p);
    t = now_ms();
    for (i = 0; i < N; i++) {
      retryrs_config_default(&c);
      c.max_attempts = 1 + i % 7;
      if (retryrs_retrier_new(&c, &retriers[i]) != RETRYRS_OK) return 1;
    }
    peer[run] = now_ms() - t;
    for (i = 0; i < N; i++) retryrs_retrier_free(retriers[i]);
  }
  qsort(ours, RUNS, sizeof ours[0], cmp);
  qsort(peer, RUNS, sizeof peer[0], cmp);
  printf("| C | `retryrs_policies_from_json` | %.1f | 10,001 `retryrs_retrier_new` by hand | %.1f | %.2fx |\n",
         ours[RUNS / 2], peer[RUNS / 2], ours[RUNS / 2] / peer[RUNS / 2]);
  free(text);
  return 0;
}
