/* Every exported function that returns a status, given a NULL where a pointer is required
 * and a bad argument where it takes one: it returns RETRYRS_INVALID_ARGUMENT and its
 * message begins with its own name (the header's promise), never another function's or
 * a Rust method's. Also the attempt bound asked for before the call began (clamped). */
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "retryrs.h"
#include "retryrs_testing.h"
#include "suites.h"

/* `status` is INVALID_ARGUMENT and the last error begins with "<function>: ". */
static void expect_named(const char *expr, retryrs_status status, const char *function, int line) {
  const char *msg = retryrs_last_error();
  size_t n = strlen(function);
  int named = strncmp(msg, function, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ';
  if (status != RETRYRS_INVALID_ARGUMENT || !named) {
    h_current_failures++;
    fprintf(stderr, "  test_errors.c:%d: %s returned %s with \"%s\"; want invalid_argument and \"%s: ...\"\n",
            line, expr, retryrs_status_name(status), msg, function);
  }
}
#define FAILS(function, ...) expect_named(#function "(" #__VA_ARGS__ ")", function(__VA_ARGS__), #function, __LINE__)

static retryrs_verdict ok_attempt(void *user_data, uint32_t attempt, double *hint_ms) {
  (void)user_data, (void)attempt, (void)hint_ms;
  return RETRYRS_SUCCESS;
}

static retryrs_retrier *make_retrier(double deadline_ms) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_config_default(&c);
  c.max_attempts = 2;
  c.jitter = RETRYRS_JITTER_NONE;
  c.has_deadline = deadline_ms > 0;
  c.deadline_ms = deadline_ms;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  return r;
}

static void test_null_arguments_name_their_function(void) {
  retryrs_retrier *r = make_retrier(1000);
  retryrs_outcome outcome;
  retryrs_step step;
  retryrs_hedge_step hstep;
  retryrs_proposal proposal;
  retryrs_stats stats;
  retryrs_config config;
  retryrs_breaker_config bconfig;
  uint64_t u64;
  int32_t i32;
  double d;
  bool b;
  size_t len;
  retryrs_verdict verdict;
  retryrs_jitter jitter;

  FAILS(retryrs_attempt_remaining_ms, NULL);
  FAILS(retryrs_retrier_call, NULL, ok_attempt, NULL, NULL, NULL, &outcome);
  FAILS(retryrs_retrier_call, r, NULL, NULL, NULL, NULL, &outcome);
  FAILS(retryrs_retrier_call_hooked, NULL, ok_attempt, NULL, NULL, NULL, NULL, &outcome);
  FAILS(retryrs_breaker_config_init, NULL);
  FAILS(retryrs_breaker_new, NULL, NULL);
  FAILS(retryrs_breaker_state, NULL, &i32, &d);
  FAILS(retryrs_breaker_state_at, NULL, 0, &i32, &d);
  FAILS(retryrs_breaker_rejections, NULL, &u64);
  FAILS(retryrs_retrier_with_breaker, NULL, NULL, NULL);
  FAILS(retryrs_budget_new, 10, 0.1, NULL);
  FAILS(retryrs_budget_new_quota, 10, 1, 1, 1, NULL);
  FAILS(retryrs_budget_new_ratio, 1000, 1, 0.1, NULL);
  FAILS(retryrs_budget_tokens, NULL, &d);
  FAILS(retryrs_cancel_new, NULL);
  FAILS(retryrs_cancel_any, NULL, 1, NULL);
  FAILS(retryrs_cancel_child, NULL, NULL);
  FAILS(retryrs_cancel_fire, NULL);
  FAILS(retryrs_cancel_is_cancelled, NULL, &b);
  FAILS(retryrs_config_init, NULL, sizeof config);
  FAILS(retryrs_jitter_parse, NULL, &jitter, &d);
  FAILS(retryrs_call_start, NULL, 0, NULL, NULL);
  FAILS(retryrs_call_refusal, NULL, &d);
  FAILS(retryrs_call_report, NULL, RETRYRS_TRANSIENT, -1, 0, &step);
  FAILS(retryrs_call_propose, NULL, RETRYRS_TRANSIENT, -1, 0, &proposal);
  FAILS(retryrs_call_settle, NULL, RETRYRS_PLAN_ENGINE, 0, 0, &step);
  FAILS(retryrs_call_after_wait, NULL, 0, &step);
  FAILS(retryrs_call_cancel, NULL, 0, &step);
  FAILS(retryrs_call_cancelled_before_start, NULL, NULL);
  FAILS(retryrs_call_remaining_ms, NULL, 0, &u64);
  FAILS(retryrs_call_record_timeout, NULL, 0, &step);
  FAILS(retryrs_hedge_start, NULL, 0, NULL, NULL);
  FAILS(retryrs_hedge_poll, NULL, 0, &hstep);
  FAILS(retryrs_hedge_report, NULL, 1, RETRYRS_SUCCESS, -1, 0, &hstep);
  FAILS(retryrs_hedge_cancel, NULL, 0, &hstep);
  FAILS(retryrs_hedge_remaining_ms, NULL, 1, 0, &u64);
  FAILS(retryrs_retrier_stats, NULL, &stats, sizeof stats);
  FAILS(retryrs_parse_retry_after, NULL, &b, &u64);
  FAILS(retryrs_parse_retry_after_at, NULL, 0, &b, &u64);
  FAILS(retryrs_http_classify, NULL, RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &verdict);
  FAILS(retryrs_http_classify_request, NULL, NULL, RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &verdict);
  FAILS(retryrs_redact_url, NULL, NULL, 0, &len);
  {
    /* Propagation: every pointer it needs, NULL; and the state errors that name it. */
    const char *name = "grpc-timeout", *value = "1S";
    retryrs_context *ctx = NULL;
    retryrs_gate *gate = NULL;
    retryrs_upward up;
    int kind;
    char buf[8];
    FAILS(retryrs_context_parse, NULL, NULL, 0, 1000, 0, NULL);
    FAILS(retryrs_context_parse, NULL, &value, 1, 1000, 0, &ctx);
    FAILS(retryrs_context_parse, &name, &value, 1, 1000, 0x80, &ctx);
    FAILS(retryrs_context_new, 100, false, NULL);
    FAILS(retryrs_context_get, NULL, &u64, NULL, NULL, NULL, NULL);
    FAILS(retryrs_context_enter, NULL);
    expect_named("retryrs_context_leave()", retryrs_context_leave(), "retryrs_context_leave", __LINE__);
    FAILS(retryrs_context_outbound, 100, 0, false, RETRYRS_MESH_NONE, RETRYRS_REQUEST_HTTP, buf, sizeof buf, &len);
    FAILS(retryrs_context_outbound, 100, 1, false, 7, RETRYRS_REQUEST_HTTP, buf, sizeof buf, &len);
    FAILS(retryrs_context_outbound, 100, 1, false, RETRYRS_MESH_NONE, 7, buf, sizeof buf, &len);
    FAILS(retryrs_context_outbound, 100, 1, false, RETRYRS_MESH_NONE, RETRYRS_REQUEST_HTTP, NULL, 8, &len);
    FAILS(retryrs_read_pushback, &name, &value, 1, NULL, &u64);
    FAILS(retryrs_read_pushback, NULL, NULL, 2, &kind, &u64);
    FAILS(retryrs_http_pushback, NULL, &name, &value, 1, &d);
    FAILS(retryrs_gate_new, 1000, 0, NULL);
    FAILS(retryrs_gate_new, 1000, 0x80, &gate);
    FAILS(retryrs_gate_receive, NULL, &name, &value, 1, &ctx, &up);
    FAILS(retryrs_host_allowed, NULL, 0, NULL, &b);
    FAILS(retryrs_host_allowed, NULL, 3, "a.example", &b);
    FAILS(retryrs_host_allowed, NULL, 0, "a.example", NULL);
    CHECK_STATUS(retryrs_gate_new(1000, 0, &gate), RETRYRS_OK);
    FAILS(retryrs_gate_receive, gate, &name, &value, 1, NULL, &up);
    FAILS(retryrs_gate_receive, gate, &name, &value, 1, &ctx, NULL);
    retryrs_gate_free(gate);
    retryrs_context_free(NULL);
    retryrs_gate_free(NULL);
  }
  FAILS(retryrs_policies_from_json, NULL, 0, NULL);
  FAILS(retryrs_policies_config, NULL, "x", &config, sizeof config);
  FAILS(retryrs_policies_retrier, NULL, "x", NULL);
  FAILS(retryrs_policies_breaker, NULL, "x", NULL);
  FAILS(retryrs_retrier_new, NULL, NULL);

  /* Out-pointers NULL with a valid handle: the message still names the function. */
  FAILS(retryrs_call_start, r, 0, NULL, NULL);
  FAILS(retryrs_hedge_start, r, 0, NULL, NULL);
  FAILS(retryrs_retrier_stats, r, NULL, sizeof stats);
  FAILS(retryrs_retrier_with_breaker, r, NULL, NULL);
  retryrs_breaker_config_init(&bconfig);
  FAILS(retryrs_breaker_new, &bconfig, NULL);
  retryrs_retrier_free(r);
}

static void test_bad_arguments_name_their_function(void) {
  retryrs_retrier *r = make_retrier(1000);
  retryrs_call *call = NULL;
  retryrs_hedge *hedge = NULL;
  retryrs_step step;
  retryrs_hedge_step hstep;
  retryrs_config config;
  retryrs_breaker_config bconfig;
  retryrs_budget *budget = NULL;
  retryrs_breaker *breaker = NULL;
  retryrs_policies *policies = NULL;
  retryrs_retrier *out = NULL;
  uint64_t u64;
  double d;
  size_t len;
  retryrs_jitter jitter;
  retryrs_verdict verdict;
  char buf[8];

  FAILS(retryrs_budget_new, -1, 0.1, &budget);
  FAILS(retryrs_budget_new_ratio, 1000, 1, -5, &budget);
  FAILS(retryrs_jitter_parse, "sideways", &jitter, &d);
  FAILS(retryrs_config_init, &config, 3);
  retryrs_config_default(&config);
  config.max_attempts = 0;
  FAILS(retryrs_retrier_new, &config, &out);
  retryrs_breaker_config_init(&bconfig);
  bconfig.break_duration_ms = -1;
  FAILS(retryrs_breaker_new, &bconfig, &breaker);
  FAILS(retryrs_http_classify, "GET", RETRYRS_HTTP_RESPONSE, 503, NULL, 2, NULL, 0, &verdict);
  FAILS(retryrs_redact_url, "http://a/", NULL, sizeof buf, &len);
  FAILS(retryrs_policies_from_json, "{", 1, &policies);
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
  FAILS(retryrs_testing_advance, 5);

  /* The sans-IO engine out of order: messages in the C function's words. */
  CHECK_STATUS(retryrs_call_start(r, 0, NULL, &call), RETRYRS_OK);
  FAILS(retryrs_call_report, call, 99, -1, 0, &step);
  FAILS(retryrs_call_after_wait, call, 0, &step);
  FAILS(retryrs_call_settle, call, RETRYRS_PLAN_ENGINE, 0, 0, &step);
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_TRANSIENT, -1, 0, &step), RETRYRS_OK);
  FAILS(retryrs_call_report, call, RETRYRS_TRANSIENT, -1, 0, &step);
  CHECK(strstr(retryrs_last_error(), "record()") == NULL);
  FAILS(retryrs_call_remaining_ms, call, 0, &u64);
  FAILS(retryrs_call_record_timeout, call, 0, &step);
  CHECK_STATUS(retryrs_call_cancel(call, 0, &step), RETRYRS_OK);
  FAILS(retryrs_call_cancel, call, 0, &step);
  retryrs_call_free(call);

  CHECK_STATUS(retryrs_hedge_start(r, 0, NULL, &hedge), RETRYRS_OK);
  FAILS(retryrs_hedge_remaining_ms, hedge, 7, 0, &u64);
  FAILS(retryrs_hedge_report, hedge, 3, RETRYRS_SUCCESS, -1, 0, &hstep);
  CHECK_STATUS(retryrs_hedge_cancel(hedge, 0, &hstep), RETRYRS_OK);
  FAILS(retryrs_hedge_poll, hedge, 0, &hstep);
  retryrs_hedge_free(hedge);
  retryrs_retrier_free(r);
}

/* A time before the call began counts as its start: never more than the bound. */
static void test_remaining_is_clamped_to_the_attempts_bound(void) {
  retryrs_retrier *r = make_retrier(1000);
  retryrs_call *call = NULL;
  uint64_t left = 0;
  CHECK_STATUS(retryrs_call_start(r, 5000, NULL, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_remaining_ms(call, 0, &left), RETRYRS_OK);
  CHECK(left == 1000);
  CHECK_STATUS(retryrs_call_remaining_ms(call, 5400, &left), RETRYRS_OK);
  CHECK(left == 600);
  retryrs_call_free(call);
  retryrs_retrier_free(r);
}

/* The one exception: from a signal handler there is no memory for a message. */
static void test_fire_from_signal_refuses_null_without_a_message(void) {
  retryrs_cancel *c = NULL;
  bool fired = false;
  CHECK_STATUS(retryrs_cancel_new(NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_cancel_fire_from_signal(NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(strncmp(retryrs_last_error(), "retryrs_cancel_new: ", 20) == 0);
  CHECK_STATUS(retryrs_cancel_new(&c), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_fire_from_signal(c), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_is_cancelled(c, &fired), RETRYRS_OK);
  CHECK(fired);
  retryrs_cancel_free(c);
}

void error_tests(void) {
  h_run("null arguments name their function", test_null_arguments_name_their_function);
  h_run("bad arguments name their function", test_bad_arguments_name_their_function);
  h_run("remaining is clamped to the attempt's bound", test_remaining_is_clamped_to_the_attempts_bound);
  h_run("fire_from_signal refuses NULL without a message", test_fire_from_signal_refuses_null_without_a_message);
}
