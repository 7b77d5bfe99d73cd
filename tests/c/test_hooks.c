/* Issue 24 in C: hooks that act on a blocking call (an exact wait, a stop), the sans-IO
 * engine's propose/settle, linked cancel tokens, a retrier's statistics, retries_left on
 * events, and every new export's NULL and bad-argument answers. */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "retryrs.h"
#include "retryrs_testing.h"
#include "suites.h"

static int contains(const char *haystack, const char *needle) { return strstr(haystack, needle) != NULL; }

/* 0: off. */
#define OFF 0

static retryrs_retrier *retrier(uint32_t attempts, double deadline_ms, double max_retry_after_ms) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_config_default(&c);
  c.max_attempts = attempts;
  c.initial_delay_ms = 100;
  c.jitter = RETRYRS_JITTER_NONE;
  c.has_deadline = deadline_ms > 0;
  c.deadline_ms = deadline_ms;
  c.has_max_retry_after = max_retry_after_ms > 0;
  c.max_retry_after_ms = max_retry_after_ms;
  c.name = "hooked";
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  return r;
}

typedef struct {
  uint32_t fail_until; /* attempts below this fail (transient) */
  uint32_t stop_at;    /* the before-retry hook stops after this attempt (0: never) */
  double waits[8];     /* the wait hook's answer after attempt n (index n) */
  retryrs_retry_info seen[8];
  size_t n_seen, n_waits_asked;
  uint64_t delays[8];
  uint32_t retries_left[16];
  size_t n_delays, n_events;
} script;

static retryrs_verdict attempt(void *user_data, uint32_t n, double *hint_ms) {
  script *s = (script *)user_data;
  (void)hint_ms;
  return n < s->fail_until ? RETRYRS_TRANSIENT : RETRYRS_SUCCESS;
}

static retryrs_plan before_retry(void *user_data, const retryrs_retry_info *info) {
  script *s = (script *)user_data;
  if (s->n_seen < 8) s->seen[s->n_seen++] = *info;
  return info->attempt == s->stop_at ? RETRYRS_PLAN_STOP : RETRYRS_PLAN_ENGINE;
}

static double wait_hook(void *user_data, const retryrs_retry_info *info) {
  script *s = (script *)user_data;
  s->n_waits_asked++;
  return info->attempt < 8 ? s->waits[info->attempt] : -1.0;
}

static void on_event(void *user_data, const retryrs_event *e) {
  script *s = (script *)user_data;
  if (e->kind == RETRYRS_EVENT_RETRYING && s->n_delays < 8) s->delays[s->n_delays++] = e->delay_ms;
  if (s->n_events < 16) s->retries_left[s->n_events++] = e->retries_left;
}

static void test_a_wait_hook_sets_exact_waits(void) {
  retryrs_retrier *r = retrier(4, OFF, OFF);
  script s = {.fail_until = 4, .waits = {0, 7, -1, 21}};
  retryrs_hooks h = {sizeof h, wait_hook, before_retry, &s};
  retryrs_listener l = {on_event, &s};
  retryrs_outcome o;
  CHECK_STATUS(retryrs_testing_enable(), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_call_hooked(r, attempt, &s, &l, NULL, &h, &o), RETRYRS_OK);
  CHECK(o.attempts == 4);
  /* 7 ms exact, the engine's 200 (a negative answer), 21 exact. */
  CHECK(s.n_delays == 3 && s.delays[0] == 7 && s.delays[1] == 200 && s.delays[2] == 21);
  CHECK(retryrs_now_ms() == 228);
  CHECK(s.n_seen == 3 && s.seen[0].attempt == 1 && s.seen[0].retries_left == 3 && s.seen[0].delay_ms == 100);
  CHECK(s.seen[1].delay_ms == 200 && s.seen[2].retries_left == 1 && s.seen[0].hint_ms < 0);
  CHECK(strcmp(s.seen[0].name, "hooked") == 0);
  /* af1 r1 af2 r2 af3 r3 success4: retries_left = 4 - attempt. */
  CHECK(s.n_events == 7 && s.retries_left[0] == 3 && s.retries_left[1] == 3 && s.retries_left[4] == 1 &&
        s.retries_left[6] == 0);
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
  retryrs_retrier_free(r);
}

static void test_a_before_retry_hook_stops_the_call(void) {
  retryrs_retrier *r = retrier(10, OFF, OFF);
  script s = {.fail_until = 100, .stop_at = 3, .waits = {-1, -1, -1, -1, -1, -1, -1, -1}};
  retryrs_hooks h = {sizeof h, wait_hook, before_retry, &s};
  retryrs_outcome o;
  retryrs_stats st;
  CHECK_STATUS(retryrs_testing_enable(), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_call_hooked(r, attempt, &s, NULL, NULL, &h, &o), RETRYRS_EXHAUSTED);
  CHECK(o.attempts == 3 && o.reason == RETRYRS_REASON_STOPPED && RETRYRS_REASON_STOPPED == 6);
  CHECK(contains(retryrs_last_error(), "hooked: gave up after 3 attempts (stopped by a hook)"));
  CHECK(s.n_waits_asked == 2);
  /* Statistics: this call, then a plain one that succeeds at once. */
  CHECK_STATUS(retryrs_retrier_call(r, attempt, &s, NULL, NULL, NULL), RETRYRS_EXHAUSTED);
  s.fail_until = 0;
  CHECK_STATUS(retryrs_retrier_call(r, attempt, &s, NULL, NULL, NULL), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_stats_get(r, &st), RETRYRS_OK);
  CHECK(st.struct_size == sizeof st && st.calls == 3 && st.attempts == 3 + 10 + 1 && st.retries == 2 + 9);
  CHECK(st.successes == 1 && st.rejections == 0 && st.cancellations == 0);
  CHECK(st.exhausted[RETRYRS_REASON_STOPPED] == 1 && st.exhausted[RETRYRS_REASON_ATTEMPTS] == 1 &&
        st.exhausted[RETRYRS_REASON_NONE] == 0);
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
  retryrs_retrier_free(r);
}

/* A plain call (no listener, no hook) counts its statistics once, at its end; the counts
 * are those of its events, whatever path it took: a first-attempt success with and
 * without a deadline, success after 3 and after 8 attempts (the 15 s deadline leaves room
 * for 8 under virtual time), a permanent failure, and a call cancelled before it starts. */
static retryrs_verdict permanent(void *user_data, uint32_t n, double *hint_ms) {
  (void)user_data;
  (void)n;
  (void)hint_ms;
  return RETRYRS_PERMANENT;
}

static void test_plain_calls_count_their_statistics_at_the_end(void) {
  retryrs_retrier *timed = retrier(10, 15000, OFF), *untimed = retrier(10, OFF, OFF);
  retryrs_retrier *both[2] = {timed, untimed};
  script s = {.fail_until = 0};
  retryrs_stats st;
  retryrs_cancel *cancelled = NULL;
  int i;
  CHECK_STATUS(retryrs_cancel_new(&cancelled), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_fire(cancelled), RETRYRS_OK);
  CHECK_STATUS(retryrs_testing_enable(), RETRYRS_OK);
  for (i = 0; i < 2; i++) {
    retryrs_retrier *r = both[i];
    s.fail_until = 0;
    CHECK_STATUS(retryrs_retrier_call(r, attempt, &s, NULL, NULL, NULL), RETRYRS_OK);
    s.fail_until = 3;
    CHECK_STATUS(retryrs_retrier_call(r, attempt, &s, NULL, NULL, NULL), RETRYRS_OK);
    s.fail_until = 8;
    CHECK_STATUS(retryrs_retrier_call(r, attempt, &s, NULL, NULL, NULL), RETRYRS_OK);
    CHECK_STATUS(retryrs_retrier_call(r, permanent, &s, NULL, NULL, NULL), RETRYRS_REJECTED);
    CHECK_STATUS(retryrs_retrier_call(r, attempt, &s, NULL, cancelled, NULL), RETRYRS_CANCELLED);
    CHECK_STATUS(retryrs_retrier_stats_get(r, &st), RETRYRS_OK);
    CHECK(st.calls == 5 && st.attempts == 1 + 3 + 8 + 1 && st.retries == 2 + 7);
    CHECK(st.successes == 3 && st.rejections == 1 && st.cancellations == 1);
  }
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
  retryrs_cancel_free(cancelled);
  retryrs_retrier_free(timed);
  retryrs_retrier_free(untimed);
}

static void test_exact_waits_obey_the_deadline_and_max_retry_after(void) {
  retryrs_retrier *r = retrier(5, 1000, 500);
  script s = {.fail_until = 100, .waits = {0, 501}};
  retryrs_hooks h = {sizeof h, wait_hook, NULL, &s};
  retryrs_outcome o;
  CHECK_STATUS(retryrs_testing_enable(), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_call_hooked(r, attempt, &s, NULL, NULL, &h, &o), RETRYRS_EXHAUSTED);
  CHECK(o.attempts == 1 && o.reason == RETRYRS_REASON_RETRY_AFTER);
  retryrs_retrier_free(r);
  r = retrier(5, 1000, OFF);
  s.waits[1] = 500;
  s.waits[2] = 500.5; /* rounded up: 500 + 501 ms > the 1000 ms deadline */
  CHECK_STATUS(retryrs_retrier_call_hooked(r, attempt, &s, NULL, NULL, &h, &o), RETRYRS_EXHAUSTED);
  CHECK(o.attempts == 2 && o.reason == RETRYRS_REASON_DEADLINE);
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
  retryrs_retrier_free(r);
}

static double nan_wait(void *user_data, const retryrs_retry_info *info) {
  (void)user_data;
  (void)info;
  return NAN;
}

static double infinite_wait(void *user_data, const retryrs_retry_info *info) {
  (void)user_data;
  (void)info;
  return INFINITY;
}

static retryrs_plan bad_plan(void *user_data, const retryrs_retry_info *info) {
  (void)user_data;
  (void)info;
  return 7;
}

static void test_bad_hook_answers_are_named(void) {
  retryrs_retrier *r = retrier(5, OFF, OFF);
  script s = {.fail_until = 100};
  retryrs_hooks h = {sizeof h, nan_wait, NULL, &s};
  retryrs_outcome o;
  CHECK_STATUS(retryrs_testing_enable(), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_call_hooked(r, attempt, &s, NULL, NULL, &h, &o), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "wait callback returned NaN") && o.attempts == 1);
  /* Refused like NaN: not 285,000 years of sleep. */
  h.wait = infinite_wait;
  CHECK_STATUS(retryrs_retrier_call_hooked(r, attempt, &s, NULL, NULL, &h, &o), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "wait callback returned inf") && o.attempts == 1);
  h.wait = NULL;
  h.before_retry = bad_plan;
  CHECK_STATUS(retryrs_retrier_call_hooked(r, attempt, &s, NULL, NULL, &h, &o), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "before_retry callback returned 7"));
  h.struct_size = 3;
  CHECK_STATUS(retryrs_retrier_call_hooked(r, attempt, &s, NULL, NULL, &h, &o), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "hooks->struct_size"));
  /* NULL hooks: a plain call. */
  s.fail_until = 2;
  CHECK_STATUS(retryrs_retrier_call_hooked(r, attempt, &s, NULL, NULL, NULL, &o), RETRYRS_OK);
  CHECK(o.attempts == 2);
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
  retryrs_retrier_free(r);
}

static void test_the_engine_proposes_and_the_program_settles(void) {
  retryrs_retrier *r = retrier(3, 1000, OFF);
  retryrs_call *call = NULL;
  retryrs_proposal p;
  retryrs_step step;
  CHECK_STATUS(retryrs_call_start(r, 0, NULL, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_settle(call, RETRYRS_PLAN_ENGINE, 0, 0, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "retryrs_call_settle: no proposed wait to settle"));
  CHECK_STATUS(retryrs_call_propose(call, RETRYRS_TRANSIENT, 150, 10, &p), RETRYRS_OK);
  CHECK(p.action == RETRYRS_ACTION_PROPOSED && p.delay_ms == 150 && p.attempt == 1 && p.retries_left == 2 &&
        p.hint_ms == 150);
  /* Proposed: report is refused until settled. */
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_TRANSIENT, -1, 10, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_settle(call, 9, 0, 10, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_settle(call, RETRYRS_PLAN_EXACT, -5, 10, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "wait_ms"));
  CHECK_STATUS(retryrs_call_settle(call, RETRYRS_PLAN_EXACT, 4.2, 20, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_RETRY && step.delay_ms == 5);
  CHECK_STATUS(retryrs_call_after_wait(call, 25, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_ATTEMPT && step.attempt == 2);
  CHECK_STATUS(retryrs_call_propose(call, RETRYRS_TRANSIENT, -1, 30, &p), RETRYRS_OK);
  CHECK(p.action == RETRYRS_ACTION_PROPOSED && p.delay_ms == 200 && p.hint_ms < 0);
  /* The hooks ran past the deadline: deadline, whatever the plan. */
  CHECK_STATUS(retryrs_call_settle(call, RETRYRS_PLAN_ENGINE, 0, 1001, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_STOP && step.outcome == RETRYRS_EXHAUSTED &&
        step.reason == RETRYRS_REASON_DEADLINE && step.attempt == 2);
  retryrs_call_free(call);
  /* A stop, and a proposal that stops at once (the last attempt). */
  CHECK_STATUS(retryrs_call_start(r, 0, NULL, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_propose(call, RETRYRS_TRANSIENT, -1, 0, &p), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_settle(call, RETRYRS_PLAN_STOP, 0, 0, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_STOP && step.reason == RETRYRS_REASON_STOPPED);
  retryrs_call_free(call);
  CHECK_STATUS(retryrs_call_start(r, 0, NULL, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_propose(call, RETRYRS_PERMANENT, -1, 0, &p), RETRYRS_OK);
  CHECK(p.action == RETRYRS_ACTION_STOP && p.outcome == RETRYRS_REJECTED && p.attempt == 1);
  retryrs_call_free(call);
  retryrs_retrier_free(r);
}

static void test_linked_cancel_tokens(void) {
  retryrs_cancel *a = NULL, *b = NULL, *any = NULL, *child = NULL, *none = NULL;
  const retryrs_cancel *parents[2];
  bool c = true;
  CHECK_STATUS(retryrs_cancel_new(&a), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_new(&b), RETRYRS_OK);
  parents[0] = a;
  parents[1] = b;
  CHECK_STATUS(retryrs_cancel_any(parents, 2, &any), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_child(a, &child), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_any(NULL, 0, &none), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_is_cancelled(any, &c), RETRYRS_OK);
  CHECK(!c);
  CHECK_STATUS(retryrs_cancel_fire(child), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_is_cancelled(a, &c), RETRYRS_OK);
  CHECK(!c); /* a child's cancel does not reach its parent */
  CHECK_STATUS(retryrs_cancel_fire(b), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_is_cancelled(any, &c), RETRYRS_OK);
  CHECK(c);
  CHECK_STATUS(retryrs_cancel_is_cancelled(none, &c), RETRYRS_OK);
  CHECK(!c);
  /* A child freed before its parent, and a parent freed before its child. */
  retryrs_cancel_free(child);
  retryrs_cancel_free(b);
  CHECK_STATUS(retryrs_cancel_is_cancelled(any, &c), RETRYRS_OK);
  CHECK(c);
  retryrs_cancel_free(any);
  retryrs_cancel_free(none);
  retryrs_cancel_free(a);
}

static void test_a_deadline_exhaustion_names_both_knobs(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  script s = {.fail_until = 100};
  retryrs_outcome o;
  retryrs_config_default(&c); /* 200 ms doubling to 5 s, deadline 15 s */
  c.max_attempts = 10;
  c.jitter = RETRYRS_JITTER_NONE;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  CHECK_STATUS(retryrs_testing_enable(), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_call(r, attempt, &s, NULL, NULL, &o), RETRYRS_EXHAUSTED);
  CHECK(o.reason == RETRYRS_REASON_DEADLINE);
  CHECK(contains(retryrs_last_error(), "(deadline_ms reached); max_attempts=10 needs up to 26200 ms of backoff waits"));
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
  retryrs_retrier_free(r);
}

static void test_new_exports_refuse_null(void) {
  retryrs_retrier *r = retrier(3, OFF, OFF);
  retryrs_cancel *k = NULL, *out = NULL;
  const retryrs_cancel *nulls[1] = {NULL};
  retryrs_call *call = NULL;
  retryrs_proposal p;
  retryrs_step step;
  retryrs_stats st;
  script s = {.fail_until = 0};
  CHECK_STATUS(retryrs_cancel_new(&k), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_any(NULL, 1, &out), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "parents must not be NULL"));
  CHECK_STATUS(retryrs_cancel_any(nulls, 1, &out), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "parents[0] must not be NULL"));
  CHECK_STATUS(retryrs_cancel_any(NULL, 0, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_cancel_child(NULL, &out), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_cancel_child(k, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(out == NULL);
  CHECK_STATUS(retryrs_retrier_stats(NULL, &st, sizeof st), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_retrier_stats(r, NULL, sizeof st), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_retrier_stats(r, &st, 8), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "struct_size"));
  CHECK_STATUS(retryrs_retrier_call_hooked(NULL, attempt, &s, NULL, NULL, NULL, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_retrier_call_hooked(r, NULL, &s, NULL, NULL, NULL, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_propose(NULL, RETRYRS_TRANSIENT, -1, 0, &p), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_settle(NULL, RETRYRS_PLAN_ENGINE, 0, 0, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_start(r, 0, NULL, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_propose(call, RETRYRS_TRANSIENT, -1, 0, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_propose(call, 42, -1, 0, &p), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_call_settle(call, RETRYRS_PLAN_ENGINE, 0, 0, NULL), RETRYRS_INVALID_ARGUMENT);
  retryrs_call_free(call);
  retryrs_cancel_free(k);
  retryrs_retrier_free(r);
}

/* Issue 27: the attempt callback says its own I/O ran out of the bound it was given
 * (RETRYRS_TIMED_OUT): a quota prices the retry after it at timeout_retry_cost, with hooks
 * (propose/settle) as without; RETRYRS_TRANSIENT stays at retry_cost. */
typedef struct {
  const retryrs_budget *quota;
  double seen[4];
  uint32_t n;
  retryrs_verdict first; /* what attempt 1 answers; attempt 2 answers RETRYRS_TIMED_OUT */
} timed;

static retryrs_verdict timing_out(void *user_data, uint32_t n, double *hint_ms) {
  timed *t = (timed *)user_data;
  (void)hint_ms;
  if (t->n < 4) CHECK_STATUS(retryrs_budget_tokens(t->quota, &t->seen[t->n++]), RETRYRS_OK);
  return n == 1 ? t->first : n == 2 ? RETRYRS_TIMED_OUT : RETRYRS_SUCCESS;
}

static void test_a_timed_out_attempt_is_priced_as_a_timeout(void) {
  int hooked;
  for (hooked = 0; hooked < 2; hooked++) {
    retryrs_budget *quota = NULL;
    retryrs_retrier *r = NULL;
    retryrs_config c;
    script s;
    retryrs_hooks hooks = {sizeof hooks, NULL, before_retry, &s};
    retryrs_outcome out;
    timed t;
    double left = 0;
    memset(&s, 0, sizeof s);
    memset(&t, 0, sizeof t);
    CHECK_STATUS(retryrs_budget_new_quota(500, 5, 10, 1, &quota), RETRYRS_OK);
    retryrs_config_default(&c);
    c.max_attempts = 3;
    c.initial_delay_ms = 0;
    c.jitter = RETRYRS_JITTER_NONE;
    c.budget = quota;
    CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
    t.quota = quota;
    t.first = RETRYRS_TRANSIENT;
    CHECK_STATUS(hooked ? retryrs_retrier_call_hooked(r, timing_out, &t, NULL, NULL, &hooks, &out)
                        : retryrs_retrier_call(r, timing_out, &t, NULL, NULL, &out),
                 RETRYRS_OK);
    CHECK(out.attempts == 3);
    CHECK(t.n == 3 && t.seen[0] == 500 && t.seen[1] == 495 && t.seen[2] == 485);
    CHECK_STATUS(retryrs_budget_tokens(quota, &left), RETRYRS_OK);
    CHECK(left == 495); /* the success gave back the last retry's 10 */
    CHECK(!hooked || s.n_seen == 2);
    retryrs_retrier_free(r);
    retryrs_budget_free(quota);
  }
}

void hooks_tests(void) {
  h_run("a timed-out attempt is priced as a timeout", test_a_timed_out_attempt_is_priced_as_a_timeout);
  h_run("a wait hook sets exact waits", test_a_wait_hook_sets_exact_waits);
  h_run("a before-retry hook stops the call; stats", test_a_before_retry_hook_stops_the_call);
  h_run("plain calls count their statistics at the end", test_plain_calls_count_their_statistics_at_the_end);
  h_run("exact waits obey the deadline and max_retry_after", test_exact_waits_obey_the_deadline_and_max_retry_after);
  h_run("bad hook answers are named", test_bad_hook_answers_are_named);
  h_run("the engine proposes and the program settles", test_the_engine_proposes_and_the_program_settles);
  h_run("linked cancel tokens", test_linked_cancel_tokens);
  h_run("a deadline exhaustion names both knobs", test_a_deadline_exhaustion_names_both_knobs);
  h_run("new exports refuse NULL", test_new_exports_refuse_null);
}
