/* The circuit breaker shared by retriers (issue 27): a breaker shared by two retriers
 * opens after the configured failures, refuses the next call without calling the attempt
 * callback, half-opens after break_duration (virtual time), closes after a successful
 * probe; the manual engine API sees the refusal; bad settings are named. */
#include <string.h>

#include "harness.h"
#include "retryrs.h"
#include "retryrs_testing.h"
#include "suites.h"

typedef struct {
  int calls;
  int up;
} dependency;

static retryrs_verdict dep_attempt(void *user_data, uint32_t attempt, double *hint_ms) {
  dependency *d = user_data;
  (void)attempt;
  (void)hint_ms;
  d->calls++;
  return d->up ? RETRYRS_SUCCESS : RETRYRS_TRANSIENT;
}

typedef struct {
  int kinds[16];
  int n;
} kinds_seen;

static void on_event(void *user_data, const retryrs_event *e) {
  kinds_seen *k = user_data;
  if (k->n < 16) k->kinds[k->n++] = e->kind;
}

static retryrs_retrier *retrier_with(uint32_t attempts, const retryrs_breaker *b) {
  retryrs_config c;
  retryrs_retrier *plain = NULL, *guarded = NULL;
  retryrs_config_default(&c);
  c.max_attempts = attempts;
  c.initial_delay_ms = 0;
  c.max_delay_ms = 0;
  CHECK_STATUS(retryrs_retrier_new(&c, &plain), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_with_breaker(plain, b, &guarded), RETRYRS_OK);
  retryrs_retrier_free(plain);
  return guarded;
}

static void shared_breaker_opens_refuses_half_opens_and_closes(void) {
  retryrs_breaker_config bc;
  retryrs_breaker *b = NULL;
  retryrs_retrier *r1, *r2;
  retryrs_outcome out;
  dependency dep = {0, 0};
  kinds_seen seen;
  retryrs_listener listener;
  int32_t state = -1;
  double left = -1;
  uint64_t refused = 0;
  CHECK_STATUS(retryrs_testing_enable(), RETRYRS_OK);
  CHECK_STATUS(retryrs_breaker_config_init(&bc), RETRYRS_OK);
  bc.failures = 2;
  bc.break_duration_ms = 30000;
  CHECK_STATUS(retryrs_breaker_new(&bc, &b), RETRYRS_OK);
  r1 = retrier_with(2, b);
  r2 = retrier_with(3, b);
  CHECK_STATUS(retryrs_retrier_call(r1, dep_attempt, &dep, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK(out.reason == RETRYRS_REASON_ATTEMPTS);
  CHECK_STATUS(retryrs_retrier_call(r2, dep_attempt, &dep, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK(dep.calls == 5);
  CHECK_STATUS(retryrs_breaker_state(b, &state, &left), RETRYRS_OK);
  CHECK(state == RETRYRS_BREAKER_OPEN && left == 30000);
  /* Refused: the callback is not called; the outcome says why. */
  CHECK_STATUS(retryrs_retrier_call(r1, dep_attempt, &dep, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK(out.reason == RETRYRS_REASON_CIRCUIT_OPEN && out.attempts == 0 && dep.calls == 5);
  CHECK(strstr(retryrs_last_error(), "gave up after 0 attempts (circuit breaker open)") != NULL);
  CHECK_STATUS(retryrs_breaker_rejections(b, &refused), RETRYRS_OK);
  CHECK(refused == 1);
  /* After the break (virtual time): a probe; its success closes the breaker. */
  CHECK_STATUS(retryrs_testing_advance(29999), RETRYRS_OK);
  CHECK_STATUS(retryrs_breaker_state(b, &state, &left), RETRYRS_OK);
  CHECK(state == RETRYRS_BREAKER_OPEN && left == 1);
  CHECK_STATUS(retryrs_testing_advance(1), RETRYRS_OK);
  CHECK_STATUS(retryrs_breaker_state(b, &state, NULL), RETRYRS_OK);
  CHECK(state == RETRYRS_BREAKER_HALF_OPEN);
  dep.up = 1;
  memset(&seen, 0, sizeof seen);
  memset(&listener, 0, sizeof listener);
  listener.on_event = on_event;
  listener.user_data = &seen;
  CHECK_STATUS(retryrs_retrier_call(r2, dep_attempt, &dep, &listener, NULL, &out), RETRYRS_OK);
  CHECK(seen.n == 3 && seen.kinds[0] == RETRYRS_EVENT_BREAKER_HALF_OPEN && seen.kinds[1] == RETRYRS_EVENT_SUCCESS &&
        seen.kinds[2] == RETRYRS_EVENT_BREAKER_CLOSED);
  CHECK_STATUS(retryrs_breaker_state(b, &state, NULL), RETRYRS_OK);
  CHECK(state == RETRYRS_BREAKER_CLOSED && dep.calls == 6);
  retryrs_retrier_free(r1);
  retryrs_retrier_free(r2);
  retryrs_breaker_free(b);
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
}

static void the_engine_api_sees_the_refusal(void) {
  retryrs_breaker_config bc;
  retryrs_breaker *b = NULL;
  retryrs_retrier *r;
  retryrs_call *call = NULL;
  retryrs_step step;
  double left = 0;
  retryrs_breaker_config_init(&bc);
  bc.failures = 1;
  bc.break_duration_ms = 1000;
  CHECK_STATUS(retryrs_breaker_new(&bc, &b), RETRYRS_OK);
  r = retrier_with(1, b);
  CHECK_STATUS(retryrs_call_start(r, 100, NULL, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_refusal(call, &left), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_TRANSIENT, -1, 100, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_STOP && step.reason == RETRYRS_REASON_ATTEMPTS);
  retryrs_call_free(call);
  call = NULL;
  CHECK_STATUS(retryrs_call_start(r, 600, NULL, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_refusal(call, &left), RETRYRS_EXHAUSTED);
  CHECK(left == 500);
  retryrs_call_free(call);
  retryrs_retrier_free(r);
  retryrs_breaker_free(b);
}

/* A hedged call asks the breaker once, like any call: two failed hedges are one failed
 * call (which opens a 1-failure breaker), and the next hedged call launches nothing. */
static void a_hedged_call_is_one_call_to_the_breaker(void) {
  static const char doc[] = "{\"breakers\": {\"b\": {\"model\": \"consecutive\", \"failures\": 1}},"
                            " \"policies\": {\"retry\": {\"breaker\": \"b\","
                            " \"hedge\": {\"max_attempts\": 2, \"delay\": \"10ms\"}}}}";
  retryrs_policies *p = NULL;
  retryrs_retrier *r = NULL;
  retryrs_hedge *h = NULL;
  retryrs_hedge_step step;
  kinds_seen seen;
  retryrs_listener listener = {on_event, &seen};
  CHECK_STATUS(retryrs_policies_from_json(doc, sizeof doc - 1, &p), RETRYRS_OK);
  CHECK_STATUS(retryrs_policies_retrier(p, "retry", &r), RETRYRS_OK);
  memset(&seen, 0, sizeof seen);
  CHECK_STATUS(retryrs_hedge_start(r, 1000, &listener, &h), RETRYRS_OK);
  CHECK_STATUS(retryrs_hedge_poll(h, 1000, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_LAUNCH && step.attempt == 1);
  CHECK_STATUS(retryrs_hedge_poll(h, 1010, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_LAUNCH && step.attempt == 2);
  CHECK_STATUS(retryrs_hedge_report(h, 1, RETRYRS_TRANSIENT, -1, 1011, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_WAIT);
  CHECK_STATUS(retryrs_hedge_report(h, 2, RETRYRS_TRANSIENT, -1, 1012, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_STOP && step.reason == RETRYRS_REASON_ATTEMPTS);
  CHECK(seen.n > 0 && seen.kinds[seen.n - 1] == RETRYRS_EVENT_BREAKER_OPENED);
  retryrs_hedge_free(h);
  h = NULL;
  memset(&seen, 0, sizeof seen);
  CHECK_STATUS(retryrs_hedge_start(r, 1020, &listener, &h), RETRYRS_OK);
  CHECK_STATUS(retryrs_hedge_poll(h, 1020, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_STOP && step.outcome == RETRYRS_EXHAUSTED &&
        step.reason == RETRYRS_REASON_CIRCUIT_OPEN && step.attempt == 0 && step.cancel == 0);
  CHECK(seen.n == 1 && seen.kinds[0] == RETRYRS_EVENT_EXHAUSTED);
  retryrs_hedge_free(h);
  retryrs_retrier_free(r);
  retryrs_policies_free(p);
}

static void bad_settings_are_named(void) {
  retryrs_breaker_config bc;
  retryrs_breaker *b = NULL;
  retryrs_breaker_config_init(&bc);
  bc.failures = 0;
  CHECK_STATUS(retryrs_breaker_new(&bc, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "config->failures must be a whole number >= 1, got 0") != NULL);
  retryrs_breaker_config_init(&bc);
  bc.model = RETRYRS_BREAKER_SAMPLING;
  bc.sampling_duration_ms = 10;
  CHECK_STATUS(retryrs_breaker_new(&bc, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "config->sampling_duration_ms must be >= 500 ms") != NULL);
  retryrs_breaker_config_init(&bc);
  bc.slow_call_duration_ms = 100;
  CHECK_STATUS(retryrs_breaker_new(&bc, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "config->slow_call_duration_ms must be unset for a consecutive breaker") != NULL);
  bc.model = RETRYRS_BREAKER_COUNT;
  bc.slow_call_duration_ms = 0.5;
  CHECK_STATUS(retryrs_breaker_new(&bc, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "config->slow_call_duration_ms must be >= 1 ms") != NULL);
  bc.slow_call_duration_ms = 0;
  bc.window_size = 0;
  CHECK_STATUS(retryrs_breaker_new(&bc, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "config->window_size must be a whole number in [1, 1000000], got 0") != NULL);
  bc.model = 7;
  CHECK_STATUS(retryrs_breaker_new(&bc, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(b == NULL);
}

/* Issue 35: resilience4j's count window with a permanent failure counted, isolate (every
 * call refused, no break ends it) and reset (closed, counts started over). */
static void count_window_isolate_and_reset(void) {
  retryrs_breaker_config bc;
  retryrs_breaker *b = NULL;
  retryrs_retrier *r;
  retryrs_outcome out;
  dependency dep = {0, 0};
  int32_t state = -1;
  CHECK_STATUS(retryrs_testing_enable(), RETRYRS_OK);
  CHECK_STATUS(retryrs_breaker_config_init(&bc), RETRYRS_OK);
  CHECK(bc.window_size == 100 && bc.minimum_calls == 100 && bc.slow_call_ratio == 1 && !bc.count_permanent);
  bc.model = RETRYRS_BREAKER_COUNT;
  bc.failure_ratio = 0.5;
  bc.minimum_calls = 2;
  bc.window_size = 2;
  CHECK_STATUS(retryrs_breaker_new(&bc, &b), RETRYRS_OK);
  r = retrier_with(1, b);
  CHECK_STATUS(retryrs_retrier_call(r, dep_attempt, &dep, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK_STATUS(retryrs_breaker_state(b, &state, NULL), RETRYRS_OK);
  CHECK(state == RETRYRS_BREAKER_CLOSED);
  dep.up = 1;
  /* 1 failure of the last 2 calls reaches 0.5: a success finds it reached. */
  CHECK_STATUS(retryrs_retrier_call(r, dep_attempt, &dep, NULL, NULL, &out), RETRYRS_OK);
  CHECK_STATUS(retryrs_breaker_state(b, &state, NULL), RETRYRS_OK);
  CHECK(state == RETRYRS_BREAKER_OPEN);
  CHECK_STATUS(retryrs_breaker_reset(b), RETRYRS_OK);
  CHECK_STATUS(retryrs_breaker_state(b, &state, NULL), RETRYRS_OK);
  CHECK(state == RETRYRS_BREAKER_CLOSED);
  CHECK_STATUS(retryrs_retrier_call(r, dep_attempt, &dep, NULL, NULL, &out), RETRYRS_OK);
  CHECK_STATUS(retryrs_breaker_isolate(b), RETRYRS_OK);
  CHECK_STATUS(retryrs_breaker_state(b, &state, NULL), RETRYRS_OK);
  CHECK(state == RETRYRS_BREAKER_ISOLATED);
  CHECK_STATUS(retryrs_testing_advance(2ull * 86400000u), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_call(r, dep_attempt, &dep, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK(out.reason == RETRYRS_REASON_CIRCUIT_OPEN && out.attempts == 0 && dep.calls == 3);
  CHECK_STATUS(retryrs_breaker_reset(b), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_call(r, dep_attempt, &dep, NULL, NULL, &out), RETRYRS_OK);
  CHECK_STATUS(retryrs_breaker_isolate(NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_breaker_reset(NULL), RETRYRS_INVALID_ARGUMENT);
  retryrs_retrier_free(r);
  retryrs_breaker_free(b);
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
}

/* A hedge launched by an attempt reported as RETRYRS_TIMED_OUT is priced by a quota as a
 * retry after a timeout (10 of 15): a second timed-out attempt finds 5 left and no third
 * hedge is sent (at the ordinary price, 5 each, it would be). */
static void a_hedge_after_a_timed_out_attempt_costs_a_timeouts_price(void) {
  static const char doc[] = "{\"budgets\": {\"q\": {\"kind\": \"quota\", \"capacity\": 15}},"
                            " \"policies\": {\"read\": {\"budget\": \"q\","
                            " \"hedge\": {\"max_attempts\": 3, \"delay\": \"60s\"}}}}";
  retryrs_policies *p = NULL;
  retryrs_retrier *r = NULL;
  retryrs_hedge *h = NULL;
  retryrs_hedge_step step;
  CHECK_STATUS(retryrs_policies_from_json(doc, sizeof doc - 1, &p), RETRYRS_OK);
  CHECK_STATUS(retryrs_policies_retrier(p, "read", &r), RETRYRS_OK);
  CHECK_STATUS(retryrs_hedge_start(r, 0, NULL, &h), RETRYRS_OK);
  CHECK_STATUS(retryrs_hedge_poll(h, 0, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_LAUNCH && step.attempt == 1);
  CHECK_STATUS(retryrs_hedge_report(h, 1, RETRYRS_TIMED_OUT, -1, 100, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_LAUNCH && step.attempt == 2);
  CHECK_STATUS(retryrs_hedge_report(h, 2, RETRYRS_TIMED_OUT, -1, 200, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_STOP && step.outcome == RETRYRS_EXHAUSTED && step.reason == RETRYRS_REASON_BUDGET);
  retryrs_hedge_free(h);
  retryrs_retrier_free(r);
  retryrs_policies_free(p);
}

void breaker_tests(void) {
  h_run("a shared breaker opens, refuses without calling, half-opens and closes",
        shared_breaker_opens_refuses_half_opens_and_closes);
  h_run("the engine API sees the breaker's refusal", the_engine_api_sees_the_refusal);
  h_run("a hedged call is one call to the breaker", a_hedged_call_is_one_call_to_the_breaker);
  h_run("a hedge after a timed-out attempt costs a timeout's price", a_hedge_after_a_timed_out_attempt_costs_a_timeouts_price);
  h_run("bad breaker settings are named", bad_settings_are_named);
  h_run("a count window, isolate and reset", count_window_isolate_and_reset);
}

/* The budget kinds in C: the AWS quota's 100 retries in an outage, Finagle's two calls per
 * retry. */
static retryrs_verdict always_down(void *user_data, uint32_t attempt, double *hint_ms) {
  (void)attempt;
  (void)hint_ms;
  ++*(int *)user_data;
  return RETRYRS_TRANSIENT;
}

static void the_quota_and_the_ratio_budget(void) {
  retryrs_budget *quota = NULL, *ratio = NULL;
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_outcome out;
  double tokens = -1;
  int calls = 0, i, by_budget = 0;
  CHECK_STATUS(retryrs_budget_new_quota(500, 5, 10, 1, &quota), RETRYRS_OK);
  retryrs_config_default(&c);
  c.max_attempts = 3;
  c.initial_delay_ms = 0;
  c.max_delay_ms = 0;
  c.budget = quota;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  for (i = 0; i < 60; i++) {
    CHECK_STATUS(retryrs_retrier_call(r, always_down, &calls, NULL, NULL, &out), RETRYRS_EXHAUSTED);
    by_budget += out.reason == RETRYRS_REASON_BUDGET;
  }
  CHECK(calls == 160 && by_budget == 10);
  CHECK_STATUS(retryrs_budget_tokens(quota, &tokens), RETRYRS_OK);
  CHECK(tokens == 0);
  retryrs_retrier_free(r);
  CHECK_STATUS(retryrs_budget_new_quota(500, 0, 10, 1, &quota), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "retry_cost") != NULL);
  retryrs_budget_free(quota);

  CHECK_STATUS(retryrs_budget_new_ratio(60000, 0, 0.5, &ratio), RETRYRS_OK);
  c.max_attempts = 2;
  c.budget = ratio;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  calls = 0;
  CHECK_STATUS(retryrs_retrier_call(r, always_down, &calls, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK(out.reason == RETRYRS_REASON_BUDGET && calls == 1);
  CHECK_STATUS(retryrs_retrier_call(r, always_down, &calls, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK(out.reason == RETRYRS_REASON_ATTEMPTS && calls == 3);
  retryrs_retrier_free(r);
  CHECK_STATUS(retryrs_budget_new_ratio(500, 0, 0.5, &quota), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "ttl") != NULL);
  retryrs_budget_free(ratio);
}

void budget_kind_tests(void) {
  h_run("the AWS quota and Finagle's ratio budget", the_quota_and_the_ratio_budget);
}
