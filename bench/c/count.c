/* bench/c/count.c: runs one scenario of bench/c/bench.c a given number of times, for
 * bench/c/instructions.py to count its instructions under valgrind (a run of N2 calls
 * minus a run of N1: one call's cost, the process's start-up cancelled out).
 *
 *   count SCENARIO N
 *
 * Scenarios: the baselines (direct, hand, direct_deadline, hand_deadline) and retryrs
 * with the default policy (default_happy, default_fail2: 15 s deadline) or with the
 * deadline off (untimed_happy, untimed_fail2). The fail2 scenarios fail twice with zero
 * delays, then succeed. Only the public header: the same source builds against any
 * commit's libretryrs.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "retryrs.h"
#include "work.h"

static retryrs_retrier *retrier;

/* One call of each scenario; the loop calls one of them through a pointer, so every
 * scenario pays the same loop overhead. */
static void direct(work *w) {
  double hint = -1;
  op_ptr(w, 1, &hint);
}

/* The hand loop, honouring a 15 s deadline or not: up to 5 attempts, no wait. */
static void hand_loop(work *w, int deadline) {
  double began = deadline ? now_ns() : 0;
  uint32_t attempt;
  for (attempt = 1; attempt <= 5; attempt++) {
    double hint = -1;
    if (op_ptr(w, attempt, &hint) != RETRYRS_TRANSIENT) break;
    if (deadline && now_ns() - began > 15e9) break;
  }
}

static void hand(work *w) { hand_loop(w, 0); }
static void hand_deadline(work *w) { hand_loop(w, 1); }

static void direct_deadline(work *w) {
  double began = now_ns(), hint = -1;
  op_ptr(w, 1, &hint);
  (void)began;
}

static void with_retryrs(work *w) {
  if (retryrs_retrier_call(retrier, op, w, NULL, NULL, NULL) != RETRYRS_OK) abort();
}

static const struct {
  const char *name;
  void (*run)(work *);
  uint32_t fail_first;
  int deadline; /* -1: no retrier */
} SCENARIOS[] = {
    {"direct", direct, 0, -1},
    {"direct_deadline", direct_deadline, 0, -1},
    {"hand", hand, 2, -1},
    {"hand_deadline", hand_deadline, 2, -1},
    {"default_happy", with_retryrs, 0, 1},
    {"default_fail2", with_retryrs, 2, 1},
    {"untimed_happy", with_retryrs, 0, 0},
    {"untimed_fail2", with_retryrs, 2, 0},
};

int main(int argc, char **argv) {
  long n, i;
  size_t s;
  retryrs_config config;
  work w = {0, 0};
  void (*volatile run)(work *) = NULL;
  if (argc != 3) {
    fprintf(stderr, "usage: count SCENARIO N\n");
    return 2;
  }
  n = atol(argv[2]);
  for (s = 0; s < sizeof SCENARIOS / sizeof SCENARIOS[0]; s++) {
    if (strcmp(argv[1], SCENARIOS[s].name) == 0) break;
  }
  if (s == sizeof SCENARIOS / sizeof SCENARIOS[0]) {
    fprintf(stderr, "count: unknown scenario %s\n", argv[1]);
    return 2;
  }
  run = SCENARIOS[s].run;
  w.fail_first = SCENARIOS[s].fail_first;
  if (SCENARIOS[s].deadline >= 0) {
    retryrs_config_default(&config);
    if (w.fail_first) {
      config.initial_delay_ms = 0;
      config.max_delay_ms = 0;
    }
    config.has_deadline = SCENARIOS[s].deadline == 1;
    if (retryrs_retrier_new(&config, &retrier) != RETRYRS_OK) return 1;
  }
  for (i = 0; i < n; i++) run(&w);
  if (w.calls != (uint64_t)n * (w.fail_first + 1)) abort();
  retryrs_retrier_free(retrier);
  return 0;
}
