/* bench/c: what retryrs costs a C caller, against the baselines measured in the same run.
 *
 *   happy path     retryrs_retrier_call with a callback that succeeds at once,
 *                  vs calling the same callback directly through a function pointer
 *                  (target: under 20 ns of overhead per call);
 *   failure path   two transient failures then success with zero delays,
 *                  vs a hand-written retry loop doing the same (target: within 2x).
 *
 * Context rows: the same baselines written the way a deadline-honouring loop must be
 * (read a monotonic clock when the call starts and after each failure), which is the
 * floor of any implementation of the contract: retryrs reads the clock just as often.
 *
 * Each figure is the median of several rounds. Prints a markdown table and writes it to
 * argv[1] if given. A benchmark, not a test: it never fails on the numbers.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "retryrs.h"
#include "work.h"

#define ROUNDS 7

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v) {
  qsort(v, ROUNDS, sizeof *v, cmp_double);
  return v[ROUNDS / 2];
}

static double bench_direct(long n, uint32_t fail_first) {
  double t[ROUNDS];
  int r;
  for (r = 0; r < ROUNDS; r++) {
    work w = {fail_first, 0};
    double start = now_ns();
    long i;
    for (i = 0; i < n; i++) {
      double hint = -1;
      op_ptr(&w, 1, &hint);
    }
    t[r] = (now_ns() - start) / (double)n;
    if (w.calls != (uint64_t)n) abort();
  }
  return median(t);
}

/* What a C programmer writes by hand: up to max_attempts calls, no wait (zero delays). */
static double bench_hand_loop(long n, uint32_t fail_first, uint32_t max_attempts) {
  double t[ROUNDS];
  int r;
  for (r = 0; r < ROUNDS; r++) {
    work w = {fail_first, 0};
    double start = now_ns();
    long i;
    for (i = 0; i < n; i++) {
      uint32_t attempt;
      for (attempt = 1; attempt <= max_attempts; attempt++) {
        double hint = -1;
        retryrs_verdict v = op_ptr(&w, attempt, &hint);
        if (v != RETRYRS_TRANSIENT) break;
      }
    }
    t[r] = (now_ns() - start) / (double)n;
    if (w.calls != (uint64_t)n * (fail_first + 1)) abort();
  }
  return median(t);
}

/* The hand loop again, honouring a 15 s deadline: a clock read at the start and after
 * each failure (with zero delays there is no wait to measure). */
static double bench_hand_deadline(long n, uint32_t fail_first, uint32_t max_attempts) {
  double t[ROUNDS];
  int r;
  for (r = 0; r < ROUNDS; r++) {
    work w = {fail_first, 0};
    double start = now_ns();
    long i;
    for (i = 0; i < n; i++) {
      uint32_t attempt;
      double began = now_ns();
      for (attempt = 1; attempt <= max_attempts; attempt++) {
        double hint = -1;
        retryrs_verdict v = op_ptr(&w, attempt, &hint);
        if (v != RETRYRS_TRANSIENT || now_ns() - began > 15e9) break;
      }
    }
    t[r] = (now_ns() - start) / (double)n;
    if (w.calls != (uint64_t)n * (fail_first + 1)) abort();
  }
  return median(t);
}

/* One monotonic clock read: the floor of any call that honours a deadline. */
static double bench_clock(long n) {
  double t[ROUNDS];
  int r;
  for (r = 0; r < ROUNDS; r++) {
    volatile double sink = 0;
    double start = now_ns();
    long i;
    for (i = 0; i < n; i++) sink += now_ns();
    t[r] = (now_ns() - start) / (double)n;
    (void)sink;
  }
  return median(t);
}

static double bench_retryrs(const retryrs_retrier *retrier, long n, uint32_t fail_first) {
  double t[ROUNDS];
  int r;
  for (r = 0; r < ROUNDS; r++) {
    work w = {fail_first, 0};
    double start = now_ns();
    long i;
    for (i = 0; i < n; i++) {
      if (retryrs_retrier_call(retrier, op, &w, NULL, NULL, NULL) != RETRYRS_OK) abort();
    }
    t[r] = (now_ns() - start) / (double)n;
    if (w.calls != (uint64_t)n * (fail_first + 1)) abort();
  }
  return median(t);
}

/* What a target's cell says after its claim: the table shows each one met or missed. */
static const char *met(bool ok) { return ok ? "met" : "missed"; }

int main(int argc, char **argv) {
  retryrs_config config;
  retryrs_retrier *defaults = NULL, *zero = NULL, *untimed = NULL, *untimed_zero = NULL;
  double direct, happy, hand, failing, direct_deadline, hand_deadline, clock_read, happy_untimed, failing_untimed;
  char table[4096];
  const long n_happy = 2000000, n_fail = 1000000;

  retryrs_config_default(&config);
  if (retryrs_retrier_new(&config, &defaults) != RETRYRS_OK) return 1;
  config.initial_delay_ms = 0;
  config.max_delay_ms = 0;
  if (retryrs_retrier_new(&config, &zero) != RETRYRS_OK) return 1;
  /* The same two policies with the deadline off: no event listener and no deadline
   * means time decides nothing, and the call never reads the clock. */
  config.has_deadline = false;
  if (retryrs_retrier_new(&config, &untimed_zero) != RETRYRS_OK) return 1;
  retryrs_config_default(&config);
  config.has_deadline = false;
  if (retryrs_retrier_new(&config, &untimed) != RETRYRS_OK) return 1;

  direct = bench_direct(n_happy, 0);
  happy = bench_retryrs(defaults, n_happy, 0);
  hand = bench_hand_loop(n_fail, 2, (uint32_t)config.max_attempts);
  failing = bench_retryrs(zero, n_fail, 2);
  direct_deadline = bench_hand_deadline(n_happy, 0, 1);
  hand_deadline = bench_hand_deadline(n_fail, 2, (uint32_t)config.max_attempts);
  clock_read = bench_clock(n_happy);
  happy_untimed = bench_retryrs(untimed, n_happy, 0);
  failing_untimed = bench_retryrs(untimed_zero, n_fail, 2);

  snprintf(table, sizeof table,
           "## C: libretryrs vs a direct call and a hand-written loop\n\n"
           "bench/c/bench.c, gcc -O2, static libretryrs %s; median of %d rounds, ns per call. retryrs runs the\n"
           "default policy (15 s deadline), so every call reads the monotonic clock when it starts (and\n"
           "after each failure): one read costs %.1f ns here. The context rows give the baselines that\n"
           "same clock read, as any loop honouring a deadline must. The last two rows turn the deadline\n"
           "off: with no deadline and no listener, time decides nothing and the call never reads the clock.\n\n"
           "| scenario | retryrs ns/call | baseline ns/call | overhead | ratio | target |\n"
           "|---|---:|---:|---:|---:|---|\n"
           "| happy path vs direct callback call | %.1f | %.1f | %.1f ns | %.2fx | overhead < 20 ns: %s |\n"
           "| 2 failures then success, zero delays, vs hand loop | %.1f | %.1f | %.1f ns | %.2fx | ratio < 2x: %s |\n"
           "| (context) happy path vs direct call + deadline clock read | %.1f | %.1f | %.1f ns | %.2fx | |\n"
           "| (context) 2 failures then success vs hand loop with deadline | %.1f | %.1f | %.1f ns | %.2fx | |\n"
           "| deadline off: happy path vs direct callback call | %.1f | %.1f | %.1f ns | %.2fx | overhead < 20 ns: %s |\n"
           "| deadline off: 2 failures then success vs hand loop | %.1f | %.1f | %.1f ns | %.2fx | ratio < 2x: %s |\n",
           retryrs_version(), ROUNDS, clock_read, happy, direct, happy - direct, happy / direct,
           met(happy - direct < 20), failing, hand, failing - hand, failing / hand, met(failing / hand < 2), happy,
           direct_deadline, happy - direct_deadline, happy / direct_deadline, failing, hand_deadline,
           failing - hand_deadline, failing / hand_deadline, happy_untimed, direct, happy_untimed - direct,
           happy_untimed / direct, met(happy_untimed - direct < 20), failing_untimed, hand, failing_untimed - hand,
           failing_untimed / hand, met(failing_untimed / hand < 2));
  fputs(table, stdout);
  if (argc > 1) {
    FILE *f = fopen(argv[1], "w");
    if (!f || fputs(table, f) < 0 || fclose(f) != 0) {
      fprintf(stderr, "bench: cannot write %s\n", argv[1]);
      return 1;
    }
  }
  retryrs_retrier_free(defaults);
  retryrs_retrier_free(zero);
  retryrs_retrier_free(untimed);
  retryrs_retrier_free(untimed_zero);
  return 0;
}
