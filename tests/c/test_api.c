/* The C API, function by function: defaults, NULL and invalid arguments, outcomes and
 * events of the blocking call, the sans-IO engine, Retry-After, statuses, versions. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "retryrs.h"
#include "retryrs_testing.h"
#include "suites.h"

/* ---- helpers ---------------------------------------------------------------------- */

#define MAX_SEEN 64

typedef struct {
  retryrs_event events[MAX_SEEN];
  char names[MAX_SEEN][32];
  size_t n;
} event_log;

static void log_event(void *user_data, const retryrs_event *e) {
  event_log *log = (event_log *)user_data;
  if (log->n < MAX_SEEN) {
    log->events[log->n] = *e;
    snprintf(log->names[log->n], sizeof log->names[0], "%s", e->name);
    log->events[log->n].name = NULL; /* only valid during the callback */
    log->n++;
  }
}

/* Fails the first `failures` attempts (transient, with hint_ms when >= 0), then succeeds. */
typedef struct {
  int failures;
  retryrs_verdict failure;
  double hint_ms;
  int calls;
} script;

static retryrs_verdict scripted(void *user_data, uint32_t attempt, double *hint_ms) {
  script *s = (script *)user_data;
  s->calls++;
  CHECK(attempt == (uint32_t)s->calls);
  CHECK(*hint_ms < 0); /* starts as "no hint" */
  if (s->calls <= s->failures) {
    if (s->hint_ms >= 0) *hint_ms = s->hint_ms;
    return s->failure;
  }
  return RETRYRS_SUCCESS;
}

static retryrs_retrier *no_jitter(uint64_t attempts, double deadline_ms) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  CHECK_STATUS(retryrs_config_default(&c), RETRYRS_OK);
  c.max_attempts = attempts;
  c.initial_delay_ms = 100;
  c.max_delay_ms = 1000;
  c.jitter = RETRYRS_JITTER_NONE;
  c.has_deadline = deadline_ms >= 0;
  c.deadline_ms = deadline_ms;
  c.name = "rates";
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  return r;
}

static int contains(const char *haystack, const char *needle) { return strstr(haystack, needle) != NULL; }

/* ---- tests ------------------------------------------------------------------------ */

static void test_version_agrees(void) {
  char expected[64];
  snprintf(expected, sizeof expected, "%d.%d.%d", RETRYRS_VERSION_MAJOR, RETRYRS_VERSION_MINOR, RETRYRS_VERSION_PATCH);
  CHECK(strcmp(RETRYRS_VERSION, expected) == 0);
  CHECK(strcmp(retryrs_version(), RETRYRS_VERSION) == 0);
}

static void test_defaults_are_the_contracts(void) {
  retryrs_config c;
  memset(&c, 0xAB, sizeof c);
  CHECK_STATUS(retryrs_config_default(&c), RETRYRS_OK);
  CHECK(c.max_attempts == 5);
  CHECK(c.initial_delay_ms == 200.0);
  CHECK(c.multiplier == 2.0);
  CHECK(c.max_delay_ms == 5000.0);
  CHECK(c.jitter == RETRYRS_JITTER_FULL);
  CHECK(c.has_deadline && c.deadline_ms == 15000.0);
  CHECK(!c.has_seed);
  CHECK(c.name == NULL && c.budget == NULL);
}

static void test_null_arguments_are_rejected_by_name(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_budget *b = NULL;
  retryrs_cancel *k = NULL;
  retryrs_call *call = NULL;
  retryrs_step step;
  retryrs_jitter j;
  double d;
  bool flag;
  uint64_t ms;
  script s = {0, RETRYRS_TRANSIENT, -1, 0};

  CHECK(retryrs_last_error() != NULL);
  CHECK_STATUS(retryrs_config_init(NULL, sizeof(retryrs_config)), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "config must not be NULL"));
  CHECK_STATUS(retryrs_config_default(&c), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_new(NULL, &r), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "config"));
  CHECK_STATUS(retryrs_retrier_new(&c, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "out"));
  CHECK(r == NULL);
  CHECK_STATUS(retryrs_budget_new(10, 1, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_budget_tokens(NULL, &d), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "budget"));
  CHECK_STATUS(retryrs_budget_new(10, 1, &b), RETRYRS_OK);
  CHECK_STATUS(retryrs_budget_tokens(b, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "tokens"));
  CHECK_STATUS(retryrs_cancel_new(NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_cancel_fire(NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_cancel_is_cancelled(NULL, &flag), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_cancel_new(&k), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_is_cancelled(k, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_retrier_call(NULL, scripted, &s, NULL, NULL, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "retrier"));
  r = no_jitter(3, -1);
  CHECK_STATUS(retryrs_retrier_call(r, NULL, &s, NULL, NULL, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "attempt"));
  CHECK(s.calls == 0);
  CHECK_STATUS(retryrs_call_start(NULL, 0, NULL, &call), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_start(r, 0, NULL, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_report(NULL, RETRYRS_SUCCESS, -1, 0, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_after_wait(NULL, 0, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_cancel(NULL, 0, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_cancelled_before_start(NULL, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_start(r, 0, NULL, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_SUCCESS, -1, 0, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "step"));
  CHECK_STATUS(retryrs_call_record_timeout(NULL, 0, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "call"));
  CHECK_STATUS(retryrs_call_record_timeout(call, 0, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "step"));
  CHECK_STATUS(retryrs_call_after_wait(call, 0, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_cancel(call, 0, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_remaining_ms(NULL, 0, &ms), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "call"));
  CHECK_STATUS(retryrs_call_remaining_ms(call, 0, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "out"));
  CHECK_STATUS(retryrs_attempt_remaining_ms(NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "out"));
  /* Outside an attempt callback: refused, *out untouched. */
  ms = 7;
  CHECK_STATUS(retryrs_attempt_remaining_ms(&ms), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "inside an attempt callback") && ms == 7);
  CHECK_STATUS(retryrs_parse_retry_after(NULL, &flag, &ms), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "value"));
  CHECK_STATUS(retryrs_parse_retry_after("5", NULL, &ms), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_parse_retry_after("5", &flag, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_parse_retry_after_at(NULL, 0, &flag, &ms), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_parse_retry_after_at("5", 0, NULL, &ms), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_jitter_parse(NULL, &j, &d), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_jitter_parse("full", NULL, &d), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_jitter_parse("full", &j, NULL), RETRYRS_INVALID_ARGUMENT);
  /* every free accepts NULL */
  retryrs_retrier_free(NULL);
  retryrs_budget_free(NULL);
  retryrs_cancel_free(NULL);
  retryrs_call_free(NULL);
  retryrs_call_free(call);
  retryrs_retrier_free(r);
  retryrs_budget_free(b);
  retryrs_cancel_free(k);
}

static void expect_invalid(retryrs_config c, const char *fragment) {
  retryrs_retrier *r = NULL;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_INVALID_ARGUMENT);
  CHECK(r == NULL);
  if (!contains(retryrs_last_error(), fragment)) {
    CHECK(!"message names the knob and value");
    fprintf(stderr, "    message \"%s\" lacks \"%s\"\n", retryrs_last_error(), fragment);
  }
}

static void test_invalid_config_values_are_named(void) {
  retryrs_config d, c;
  retryrs_config_default(&d);
  c = d; c.max_attempts = 0; expect_invalid(c, "max_attempts must be >= 1");
  CHECK(contains(retryrs_last_error(), "got 0"));
  c = d; c.max_attempts = 1ULL << 40; expect_invalid(c, "max_attempts");
  c = d; c.initial_delay_ms = -1; expect_invalid(c, "initial_delay_ms must be finite and >= 0 (at most about 285,000 years), got -1 ms");
  c = d; c.initial_delay_ms = NAN; expect_invalid(c, "initial_delay_ms");
  c = d; c.max_delay_ms = INFINITY; expect_invalid(c, "max_delay_ms");
  c = d; c.initial_delay_ms = 2000; c.max_delay_ms = 1000; expect_invalid(c, "max_delay_ms must be >= initial_delay");
  c = d; c.multiplier = 0.5; expect_invalid(c, "multiplier must be finite and >= 1, got 0.5");
  c = d; c.multiplier = NAN; expect_invalid(c, "multiplier");
  c = d; c.jitter = 99; expect_invalid(c, "jitter must be one of");
  c = d; c.jitter = RETRYRS_JITTER_PROPORTIONAL; c.jitter_factor = 1.5; expect_invalid(c, "config->jitter_factor must be in [0, 1] with RETRYRS_JITTER_PROPORTIONAL, got 1.5");
  c = d; c.jitter = RETRYRS_JITTER_PROPORTIONAL; c.jitter_factor = NAN; expect_invalid(c, "config->jitter_factor must be in [0, 1] with RETRYRS_JITTER_PROPORTIONAL, got NaN");
  c = d; c.has_deadline = true; c.deadline_ms = -5; expect_invalid(c, "deadline_ms must be finite and >= 0 (at most about 285,000 years), got -5 ms");
  c = d; c.name = "\xff\xfe"; expect_invalid(c, "config->name is not valid UTF-8");
  /* a deadline that is off is not validated */
  c = d; c.has_deadline = false; c.deadline_ms = -5;
  {
    retryrs_retrier *r = NULL;
    CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
    retryrs_retrier_free(r);
  }
}

static void test_invalid_values_elsewhere(void) {
  retryrs_budget *b = NULL;
  retryrs_jitter j = -1;
  double f = -1;
  CHECK_STATUS(retryrs_budget_new(0, 1, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "max_tokens"));
  CHECK_STATUS(retryrs_budget_new(10, 0, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "token_ratio"));
  CHECK_STATUS(retryrs_budget_new(NAN, 1, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(b == NULL);
  CHECK_STATUS(retryrs_jitter_parse("gaussian", &j, &f), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "jitter"));
  CHECK(contains(retryrs_last_error(), "gaussian"));
  CHECK_STATUS(retryrs_jitter_parse("proportional(0.25)", &j, &f), RETRYRS_OK);
  CHECK(j == RETRYRS_JITTER_PROPORTIONAL && f == 0.25);
  CHECK_STATUS(retryrs_jitter_parse("decorrelated", &j, &f), RETRYRS_OK);
  CHECK(j == RETRYRS_JITTER_DECORRELATED && f == 0);
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
  CHECK(!retryrs_testing_is_on());
  CHECK_STATUS(retryrs_testing_advance(5), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "virtual time is off"));
  CHECK(strcmp(retryrs_status_name(RETRYRS_EXHAUSTED), "exhausted") == 0);
  CHECK(strcmp(retryrs_status_name(-7), "unknown") == 0);
}

static retryrs_verdict bad_verdict(void *user_data, uint32_t attempt, double *hint_ms) {
  (void)hint_ms;
  *(uint32_t *)user_data = attempt;
  return 42;
}

static void test_an_unknown_verdict_ends_the_call(void) {
  retryrs_retrier *r = no_jitter(5, -1);
  uint32_t seen = 0;
  retryrs_outcome out = {99, 99};
  CHECK_STATUS(retryrs_retrier_call(r, bad_verdict, &seen, NULL, NULL, &out), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "returned 42"));
  CHECK(seen == 1 && out.attempts == 1 && out.reason == RETRYRS_REASON_NONE);
  retryrs_retrier_free(r);
}

static void test_success_after_failures_emits_events_in_order(void) {
  retryrs_retrier *r = no_jitter(6, 60000);
  script s = {2, RETRYRS_TRANSIENT, -1, 0};
  event_log log;
  retryrs_listener l = {log_event, &log};
  retryrs_outcome out;
  memset(&log, 0, sizeof log);
  retryrs_testing_enable();
  CHECK_STATUS(retryrs_retrier_call(r, scripted, &s, &l, NULL, &out), RETRYRS_OK);
  CHECK(retryrs_now_ms() == 300); /* 100 + 200 ms of virtual waits */
  retryrs_testing_disable();
  CHECK(s.calls == 3 && out.attempts == 3 && out.reason == RETRYRS_REASON_NONE);
  CHECK(log.n == 5);
  if (log.n == 5) {
    static const retryrs_event_kind kinds[] = {RETRYRS_EVENT_ATTEMPT_FAILED, RETRYRS_EVENT_RETRYING,
                                               RETRYRS_EVENT_ATTEMPT_FAILED, RETRYRS_EVENT_RETRYING,
                                               RETRYRS_EVENT_SUCCESS};
    static const uint32_t attempts[] = {1, 1, 2, 2, 3};
    static const uint64_t elapsed[] = {0, 0, 100, 100, 300};
    static const uint64_t delays[] = {0, 100, 0, 200, 0};
    size_t i;
    for (i = 0; i < 5; i++) {
      CHECK(log.events[i].kind == kinds[i]);
      CHECK(log.events[i].attempt == attempts[i]);
      CHECK(log.events[i].elapsed_ms == elapsed[i]);
      CHECK(log.events[i].delay_ms == delays[i]);
      CHECK(log.events[i].reason == RETRYRS_REASON_NONE);
      CHECK(strcmp(log.names[i], "rates") == 0);
    }
  }
  retryrs_retrier_free(r);
}

static void test_rejected_exhausted_and_hints(void) {
  retryrs_retrier *r = no_jitter(3, -1);
  retryrs_retrier *tight = no_jitter(10, 250);
  script perm = {5, RETRYRS_PERMANENT, -1, 0};
  script always = {99, RETRYRS_TRANSIENT, -1, 0};
  script hinted = {1, RETRYRS_TRANSIENT, 1500.4, 0};
  event_log log;
  retryrs_listener l = {log_event, &log};
  retryrs_outcome out;
  retryrs_testing_enable();

  CHECK_STATUS(retryrs_retrier_call(r, scripted, &perm, NULL, NULL, &out), RETRYRS_REJECTED);
  CHECK(perm.calls == 1 && out.attempts == 1);
  CHECK(contains(retryrs_last_error(), "failed permanently"));

  memset(&log, 0, sizeof log);
  CHECK_STATUS(retryrs_retrier_call(r, scripted, &always, &l, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK(always.calls == 3 && out.attempts == 3 && out.reason == RETRYRS_REASON_ATTEMPTS);
  CHECK(contains(retryrs_last_error(), "gave up after 3 attempts (max_attempts reached)"));
  CHECK(log.n == 6 && log.events[5].kind == RETRYRS_EVENT_EXHAUSTED && log.events[5].reason == RETRYRS_REASON_ATTEMPTS);

  /* 100 ms, then 200 ms would end past the 250 ms deadline: exhausted without sleeping */
  always.calls = 0;
  CHECK_STATUS(retryrs_retrier_call(tight, scripted, &always, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK(out.attempts == 2 && out.reason == RETRYRS_REASON_DEADLINE);

  /* the hint wins over the 100 ms backoff and is rounded up to whole ms */
  memset(&log, 0, sizeof log);
  CHECK_STATUS(retryrs_retrier_call(r, scripted, &hinted, &l, NULL, &out), RETRYRS_OK);
  CHECK(log.n == 3 && log.events[1].delay_ms == 1501);
  retryrs_testing_disable();
  retryrs_retrier_free(r);
  retryrs_retrier_free(tight);
}

static void test_budget_is_shared_and_exhausts(void) {
  retryrs_budget *b = NULL;
  retryrs_config c;
  retryrs_retrier *r = NULL;
  script always = {99, RETRYRS_TRANSIENT, -1, 0};
  retryrs_outcome out;
  double tokens = -1;
  CHECK_STATUS(retryrs_budget_new(4, 0.5, &b), RETRYRS_OK);
  retryrs_config_default(&c);
  c.budget = b;
  c.initial_delay_ms = 0;
  c.max_delay_ms = 0;
  c.max_attempts = 10;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_call(r, scripted, &always, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  /* 4 tokens: a retry needs > 2, so the 2nd failure leaves 2 and stops the call */
  CHECK(out.reason == RETRYRS_REASON_BUDGET && out.attempts == 2);
  CHECK_STATUS(retryrs_budget_tokens(b, &tokens), RETRYRS_OK);
  CHECK(tokens == 2.0);
  retryrs_budget_free(b); /* the retrier keeps its own reference */
  always.calls = 0;
  always.failures = 0;
  CHECK_STATUS(retryrs_retrier_call(r, scripted, &always, NULL, NULL, &out), RETRYRS_OK);
  retryrs_retrier_free(r);
}

static void test_an_already_cancelled_token_runs_nothing(void) {
  retryrs_retrier *r = no_jitter(3, -1);
  retryrs_cancel *k = NULL;
  script s = {0, RETRYRS_TRANSIENT, -1, 0};
  event_log log, log2;
  retryrs_listener l = {log_event, &log}, l2 = {log_event, &log2};
  retryrs_outcome out = {7, 7};
  bool cancelled = false;
  memset(&log, 0, sizeof log);
  memset(&log2, 0, sizeof log2);
  CHECK_STATUS(retryrs_cancel_new(&k), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_fire(k), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_is_cancelled(k, &cancelled), RETRYRS_OK);
  CHECK(cancelled);
  CHECK_STATUS(retryrs_retrier_call(r, scripted, &s, &l, k, &out), RETRYRS_CANCELLED);
  CHECK(s.calls == 0 && out.attempts == 0);
  CHECK(log.n == 1 && log.events[0].kind == RETRYRS_EVENT_CANCELLED && log.events[0].attempt == 0);
  /* the engine's equivalent */
  CHECK_STATUS(retryrs_call_cancelled_before_start(r, &l2), RETRYRS_CANCELLED);
  CHECK(log2.n == 1 && log2.events[0].kind == RETRYRS_EVENT_CANCELLED && log2.events[0].attempt == 0);
  retryrs_cancel_free(k);
  retryrs_retrier_free(r);
}

static void test_engine_drives_a_call_by_hand(void) {
  retryrs_retrier *r = no_jitter(3, 60000);
  retryrs_call *call = NULL;
  retryrs_step step;
  event_log log;
  retryrs_listener l = {log_event, &log};
  memset(&log, 0, sizeof log);
  CHECK_STATUS(retryrs_call_start(r, 5000, &l, &call), RETRYRS_OK);
  retryrs_retrier_free(r); /* the call keeps the policy alive */
  CHECK_STATUS(retryrs_call_after_wait(call, 5000, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "after_wait"));
  CHECK_STATUS(retryrs_call_report(call, 9, -1, 5000, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "verdict") && contains(retryrs_last_error(), "RETRYRS_TIMED_OUT"));
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_TRANSIENT, -1, 5010, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_RETRY && step.delay_ms == 100 && step.attempt == 1);
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_SUCCESS, -1, 5010, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_after_wait(call, 5110, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_ATTEMPT && step.attempt == 2);
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_TRANSIENT, 700, 5110, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_RETRY && step.delay_ms == 700 && step.attempt == 2);
  CHECK_STATUS(retryrs_call_cancel(call, 5200, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_STOP && step.outcome == RETRYRS_CANCELLED && step.attempt == 2);
  CHECK_STATUS(retryrs_call_cancel(call, 5200, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "ended"));
  CHECK(log.n == 5);
  CHECK(log.n == 5 && log.events[4].kind == RETRYRS_EVENT_CANCELLED && log.events[4].elapsed_ms == 200);
  CHECK(log.n == 5 && log.events[2].elapsed_ms == 110 && strcmp(log.names[2], "rates") == 0);
  retryrs_call_free(call);
}

static void test_engine_reports_exhaustion_and_success(void) {
  retryrs_retrier *r = no_jitter(2, -1);
  retryrs_call *call = NULL;
  retryrs_step step;
  CHECK_STATUS(retryrs_call_start(r, 0, NULL, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_TRANSIENT, -1, 0, &step), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_after_wait(call, step.delay_ms, &step), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_TRANSIENT, -1, 100, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_STOP && step.outcome == RETRYRS_EXHAUSTED &&
        step.reason == RETRYRS_REASON_ATTEMPTS && step.attempt == 2);
  retryrs_call_free(call);
  CHECK_STATUS(retryrs_call_start(r, 0, NULL, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_SUCCESS, -1, 3, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_STOP && step.outcome == RETRYRS_OK && step.attempt == 1);
  retryrs_call_free(call);
  /* a call abandoned mid-way is freed without leaking */
  CHECK_STATUS(retryrs_call_start(r, 0, NULL, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_TRANSIENT, -1, 0, &step), RETRYRS_OK);
  retryrs_call_free(call);
  retryrs_retrier_free(r);
}

static void test_seeded_jitter_repeats(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  event_log a, b;
  retryrs_listener la = {log_event, &a}, lb = {log_event, &b};
  script s1 = {4, RETRYRS_TRANSIENT, -1, 0}, s2 = {4, RETRYRS_TRANSIENT, -1, 0};
  size_t i;
  retryrs_config_default(&c);
  c.has_seed = true;
  c.seed = 42;
  c.has_deadline = false;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  retryrs_testing_enable();
  CHECK_STATUS(retryrs_retrier_call(r, scripted, &s1, &la, NULL, NULL), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_call(r, scripted, &s2, &lb, NULL, NULL), RETRYRS_OK);
  retryrs_testing_disable();
  CHECK(a.n == 9 && b.n == 9);
  for (i = 0; i < a.n && i < b.n; i++) CHECK(a.events[i].delay_ms == b.events[i].delay_ms);
  retryrs_retrier_free(r);
}

static void test_retry_after_and_statuses(void) {
  bool has = true;
  uint64_t ms = 1;
  const int64_t now = 784111777LL * 1000; /* Sun, 06 Nov 1994 08:49:37 GMT */
  CHECK_STATUS(retryrs_parse_retry_after_at("120", now, &has, &ms), RETRYRS_OK);
  CHECK(has && ms == 120000);
  CHECK_STATUS(retryrs_parse_retry_after_at("Sun, 06 Nov 1994 08:50:37 GMT", now, &has, &ms), RETRYRS_OK);
  CHECK(has && ms == 60000);
  CHECK_STATUS(retryrs_parse_retry_after_at("Sun Nov  6 08:50:37 1994", now + 500, &has, &ms), RETRYRS_OK);
  CHECK(has && ms == 59500);
  CHECK_STATUS(retryrs_parse_retry_after_at("Sun, 06 Nov 1994 08:48:37 GMT", now, &has, &ms), RETRYRS_OK);
  CHECK(has && ms == 0);
  CHECK_STATUS(retryrs_parse_retry_after_at("1.5", now, &has, &ms), RETRYRS_OK);
  CHECK(!has);
  CHECK_STATUS(retryrs_parse_retry_after_at("\xff", now, &has, &ms), RETRYRS_OK);
  CHECK(!has);
  CHECK_STATUS(retryrs_parse_retry_after("99999999999999999999999", &has, &ms), RETRYRS_OK);
  CHECK(has && ms == RETRYRS_MAX_DELAY_MS);
  CHECK_STATUS(retryrs_parse_retry_after(" 3 ", &has, &ms), RETRYRS_OK);
  CHECK(has && ms == 3000);
  CHECK(retryrs_is_retryable_status(503) && retryrs_is_retryable_status(429) && retryrs_is_retryable_status(408));
  CHECK(!retryrs_is_retryable_status(200) && !retryrs_is_retryable_status(404) && !retryrs_is_retryable_status(501));
  CHECK(!retryrs_is_retryable_status(-503) && !retryrs_is_retryable_status(503 + 65536));
}

static void test_redact_url(void) {
  char buf[128];
  size_t len = 0;
  const char *url = "http://user:secret@h:8080/p?sig=abc&x=1&X-Goog-Signature=g#f";
  const char *want = "http://REDACTED:REDACTED@h:8080/p?sig=REDACTED&x=1&X-Goog-Signature=REDACTED#f";
  CHECK_STATUS(retryrs_redact_url(url, buf, sizeof buf, &len), RETRYRS_OK);
  CHECK(strcmp(buf, want) == 0 && len == strlen(want));
  /* too small: cut short, NUL-terminated, and the length says how much is needed */
  CHECK_STATUS(retryrs_redact_url(url, buf, 8, &len), RETRYRS_OK);
  CHECK(strcmp(buf, "http://") == 0 && len == strlen(want));
  CHECK_STATUS(retryrs_redact_url(url, NULL, 0, &len), RETRYRS_OK);
  CHECK(len == strlen(want));
  CHECK_STATUS(retryrs_redact_url(url, buf, sizeof buf, NULL), RETRYRS_OK);
  CHECK_STATUS(retryrs_redact_url(NULL, buf, sizeof buf, &len), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "url"));
  CHECK_STATUS(retryrs_redact_url(url, NULL, 4, &len), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "buf"));
}

/* A huge hint with no deadline and no max_retry_after: the engine asks for the longest
 * wait the header documents, never UINT64_MAX, so an event loop's now + delay_ms holds. */
static void test_the_longest_wait_is_bounded(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_call *call = NULL;
  retryrs_step step;
  const double hints[] = {INFINITY, 1e300, 18446744073709551615.0, 9e15 + 1, 9e15 - 1};
  const uint64_t now = retryrs_now_ms();
  size_t i;
  retryrs_config_default(&c);
  c.jitter = RETRYRS_JITTER_NONE;
  c.has_deadline = false;
  c.has_max_retry_after = false;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  for (i = 0; i < sizeof hints / sizeof hints[0]; i++) {
    CHECK_STATUS(retryrs_call_start(r, now, NULL, &call), RETRYRS_OK);
    CHECK_STATUS(retryrs_call_report(call, RETRYRS_TRANSIENT, hints[i], now, &step), RETRYRS_OK);
    CHECK(step.action == RETRYRS_ACTION_RETRY);
    CHECK(step.delay_ms == (i + 1 < sizeof hints / sizeof hints[0] ? RETRYRS_MAX_DELAY_MS : RETRYRS_MAX_DELAY_MS - 1));
    CHECK(now + step.delay_ms > now);
    retryrs_call_free(call);
  }
  retryrs_retrier_free(r);
}

void api_tests(void) {
  h_run("version macros and runtime version agree", test_version_agrees);
  h_run("config defaults are the contract's", test_defaults_are_the_contracts);
  h_run("NULL arguments are rejected by name", test_null_arguments_are_rejected_by_name);
  h_run("invalid config values are named", test_invalid_config_values_are_named);
  h_run("invalid values elsewhere", test_invalid_values_elsewhere);
  h_run("an unknown verdict ends the call", test_an_unknown_verdict_ends_the_call);
  h_run("success after failures: events in order", test_success_after_failures_emits_events_in_order);
  h_run("rejected, exhausted and hints", test_rejected_exhausted_and_hints);
  h_run("budget is shared and exhausts", test_budget_is_shared_and_exhausts);
  h_run("an already cancelled token runs nothing", test_an_already_cancelled_token_runs_nothing);
  h_run("the engine drives a call by hand", test_engine_drives_a_call_by_hand);
  h_run("the engine reports exhaustion and success", test_engine_reports_exhaustion_and_success);
  h_run("seeded jitter repeats", test_seeded_jitter_repeats);
  h_run("Retry-After and statuses", test_retry_after_and_statuses);
  h_run("URLs are redacted by the url.full rule", test_redact_url);
  h_run("the longest wait is bounded", test_the_longest_wait_is_bounded);
}
