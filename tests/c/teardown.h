/* What every teardown test does: a failing call, retryrs_last_error(), an unseeded
 * retrying call (its jitter needs a fresh seed), a cancel, the sans-IO engine and a bad
 * policy document, each checked. td_exercise() returns the number of failed checks and
 * prints each one; td_ran counts the runs, so a program can tell that its exit-time hook
 * ran at all. Shared by teardown.c and teardown.cpp (C and C++). */
#ifndef RETRYRS_TESTS_TEARDOWN_H
#define RETRYRS_TESTS_TEARDOWN_H

#include <stdio.h>
#include <string.h>

#include "retryrs.h"

static int td_ran;

#define TD_CHECK(failures, where, cond)                                             \
  do {                                                                            \
    if (!(cond)) {                                                                \
      (failures)++;                                                               \
      fprintf(stderr, "%s: %s:%d: CHECK failed: %s (last error: %s)\n", (where), __FILE__, \
              __LINE__, #cond, retryrs_last_error());                             \
    }                                                                             \
  } while (0)

static retryrs_verdict td_always_transient(void *user_data, uint32_t attempt, double *hint_ms) {
  (void)user_data;
  (void)attempt;
  (void)hint_ms;
  return RETRYRS_TRANSIENT;
}

static int td_exercise(const char *where) {
  int failures = 0;
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_cancel *k = NULL;
  retryrs_call *call = NULL;
  retryrs_policies *p = NULL;
  retryrs_outcome out;
  retryrs_step step;
  retryrs_status s;
  static const char td_bad_doc[] = "{\"policies\": [}";
  td_ran++;

  /* A failing call, then its message. */
  TD_CHECK(failures, where, retryrs_config_default(&c) == RETRYRS_OK);
  c.max_attempts = 0;
  TD_CHECK(failures, where, retryrs_retrier_new(&c, &r) == RETRYRS_INVALID_ARGUMENT);
  TD_CHECK(failures, where, strstr(retryrs_last_error(), "max_attempts must be >= 1") != NULL);

  /* An unseeded retrying call with full jitter: it needs a fresh seed. */
  TD_CHECK(failures, where, retryrs_config_default(&c) == RETRYRS_OK);
  c.max_attempts = 3;
  c.initial_delay_ms = 1;
  c.max_delay_ms = 2;
  TD_CHECK(failures, where, retryrs_retrier_new(&c, &r) == RETRYRS_OK);
  s = retryrs_retrier_call(r, td_always_transient, NULL, NULL, NULL, &out);
  TD_CHECK(failures, where, s == RETRYRS_EXHAUSTED);
  TD_CHECK(failures, where, out.attempts == 3 && out.reason == RETRYRS_REASON_ATTEMPTS);

  /* A cancel fired before the call: nothing runs. */
  TD_CHECK(failures, where, retryrs_cancel_new(&k) == RETRYRS_OK);
  TD_CHECK(failures, where, retryrs_cancel_fire(k) == RETRYRS_OK);
  TD_CHECK(failures, where, retryrs_retrier_call(r, td_always_transient, NULL, NULL, k, &out) == RETRYRS_CANCELLED);
  retryrs_cancel_free(k);

  /* The sans-IO engine: a failed attempt gets a jittered delay. */
  TD_CHECK(failures, where, retryrs_call_start(r, retryrs_now_ms(), NULL, &call) == RETRYRS_OK);
  TD_CHECK(failures, where, retryrs_call_report(call, RETRYRS_TRANSIENT, -1, retryrs_now_ms(), &step) == RETRYRS_OK);
  TD_CHECK(failures, where, step.action == RETRYRS_ACTION_RETRY && step.delay_ms <= 1);
  TD_CHECK(failures, where, retryrs_call_after_wait(call, retryrs_now_ms(), NULL) == RETRYRS_INVALID_ARGUMENT);
  TD_CHECK(failures, where, strstr(retryrs_last_error(), "NULL") != NULL);
  retryrs_call_free(call);
  retryrs_retrier_free(r);

  /* A bad policy document: the message says where. */
  TD_CHECK(failures, where, retryrs_policies_from_json(td_bad_doc, strlen(td_bad_doc), &p) == RETRYRS_INVALID_ARGUMENT);
  TD_CHECK(failures, where, strstr(retryrs_last_error(), "line 1") != NULL);
  retryrs_policies_free(p);
  if (failures) fprintf(stderr, "%s: %d checks failed\n", where, failures);
  return failures;
}

#endif
