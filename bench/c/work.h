/* bench/c/work.h: the "work" bench.c times and count.c counts, one definition for both:
 * an attempt callback trivial on purpose (so the figures show the library's own
 * overhead), failing its first `fail_first` attempts, and the monotonic clock in ns. */
#ifndef RETRYRS_BENCH_WORK_H
#define RETRYRS_BENCH_WORK_H

#include <stdint.h>
#include <time.h>

#include "retryrs.h"

typedef struct {
  uint32_t fail_first; /* attempts before this one fail */
  uint64_t calls;
} work;

static retryrs_verdict op(void *user_data, uint32_t attempt, double *hint_ms) {
  work *w = (work *)user_data;
  (void)hint_ms;
  w->calls++;
  return attempt <= w->fail_first ? RETRYRS_TRANSIENT : RETRYRS_SUCCESS;
}

/* volatile: the compiler must make a real indirect call, as the library does. */
static retryrs_attempt_fn volatile op_ptr = op;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#endif
