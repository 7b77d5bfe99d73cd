/* Contract v2 in C: the HTTP classifier, budget ratios that truncate to nothing, and (below)
 * calls driven from their own callbacks, frees from inside callbacks and a retrier freed
 * on another thread mid-call. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "retryrs.h"
#include "retryrs_testing.h"
#include "suites.h"

/* Built with -Wall -Werror: a kind missing from this switch (no default) fails the
 * build, which is what the enum in the header is for. */
static const char *event_kind_name(retryrs_event_kind kind) {
  switch ((enum retryrs_event_kind)kind) {
    case RETRYRS_EVENT_SUCCESS: return "success";
    case RETRYRS_EVENT_ATTEMPT_FAILED: return "attempt_failed";
    case RETRYRS_EVENT_RETRYING: return "retrying";
    case RETRYRS_EVENT_REJECTED: return "rejected";
    case RETRYRS_EVENT_EXHAUSTED: return "exhausted";
    case RETRYRS_EVENT_CANCELLED: return "cancelled";
    case RETRYRS_EVENT_HEDGE: return "hedge";
    case RETRYRS_EVENT_BREAKER_OPENED: return "breaker_opened";
    case RETRYRS_EVENT_BREAKER_HALF_OPEN: return "breaker_half_open";
    case RETRYRS_EVENT_BREAKER_CLOSED: return "breaker_closed";
  }
  return "?";
}

static const char *verdict_name(retryrs_verdict v) {
  switch ((enum retryrs_verdict)v) {
    case RETRYRS_SUCCESS: return "success";
    case RETRYRS_TRANSIENT: return "transient";
    case RETRYRS_PERMANENT: return "permanent";
    case RETRYRS_TIMED_OUT: return "timed_out";
    case RETRYRS_DONT_RETRY: return "dont_retry";
  }
  return "?";
}

static void test_verdicts_and_event_kinds_keep_their_values(void) {
  CHECK(RETRYRS_SUCCESS == 0 && RETRYRS_TRANSIENT == 1 && RETRYRS_PERMANENT == 2 && RETRYRS_TIMED_OUT == 3 &&
        RETRYRS_DONT_RETRY == 4);
  CHECK(RETRYRS_EVENT_SUCCESS == 0 && RETRYRS_EVENT_ATTEMPT_FAILED == 1 && RETRYRS_EVENT_RETRYING == 2);
  CHECK(RETRYRS_EVENT_REJECTED == 3 && RETRYRS_EVENT_EXHAUSTED == 4 && RETRYRS_EVENT_CANCELLED == 5 &&
        RETRYRS_EVENT_HEDGE == 6);
  /* The breaker's events came after hedging's: 7, 8, 9. */
  CHECK(RETRYRS_EVENT_BREAKER_OPENED == 7 && RETRYRS_EVENT_BREAKER_HALF_OPEN == 8 && RETRYRS_EVENT_BREAKER_CLOSED == 9);
  CHECK(strcmp(event_kind_name(RETRYRS_EVENT_BREAKER_CLOSED), "breaker_closed") == 0);
  CHECK(sizeof(retryrs_verdict) == 4 && sizeof(retryrs_event_kind) == 4);
  CHECK(strcmp(event_kind_name(RETRYRS_EVENT_RETRYING), "retrying") == 0);
  CHECK(strcmp(verdict_name(RETRYRS_PERMANENT), "permanent") == 0);
}

static void test_http_classify_follows_the_contract(void) {
  retryrs_verdict v = -1;
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_TRANSIENT);
  CHECK_STATUS(retryrs_http_classify("POST", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_SUCCESS);
  CHECK_STATUS(retryrs_http_classify("POST", RETRYRS_HTTP_NETWORK_FAILED, 0, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_PERMANENT);
  CHECK_STATUS(retryrs_http_classify("POST", RETRYRS_HTTP_CONNECT_FAILED, 0, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_TRANSIENT);
  const char *const methods[] = {"POST"};
  const int32_t statuses[] = {409};
  CHECK_STATUS(retryrs_http_classify("post", RETRYRS_HTTP_RESPONSE, 409, methods, 1, statuses, 1, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_TRANSIENT);
  /* An empty (non-NULL) list is empty, not the default. */
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 503, methods, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_SUCCESS);
}

static void test_http_classify_rejects_bad_arguments_by_name(void) {
  retryrs_verdict v = -1;
  const char *const with_null[] = {"GET", NULL};
  CHECK_STATUS(retryrs_http_classify(NULL, RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "method") != NULL);
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "verdict") != NULL);
  CHECK_STATUS(retryrs_http_classify("GET", 7, 503, NULL, 0, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "outcome") != NULL);
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 70000, NULL, 0, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "status") != NULL);
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 503, NULL, 2, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "retry_methods is NULL but retry_methods_len is 2") != NULL);
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 503, with_null, 2, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "retry_methods[1]") != NULL);
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 3, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "retry_statuses is NULL but retry_statuses_len is 3") != NULL);
  const int32_t bad_statuses[] = {503, 70000};
  CHECK_STATUS(retryrs_http_classify_request("GET", NULL, RETRYRS_HTTP_RESPONSE, 503, NULL, 0, bad_statuses, 2, &v),
               RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "retryrs_http_classify_request: retry_statuses[1] must be an HTTP status") != NULL);
  CHECK(v == -1); /* never written on failure */
}

/* An Idempotency-Key makes a POST or PATCH repeatable (issue 23); NULL means no header. */
static void test_http_classify_request_honours_an_idempotency_key(void) {
  retryrs_verdict v = -1;
  CHECK_STATUS(retryrs_http_classify_request("POST", "k-1", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_TRANSIENT);
  CHECK_STATUS(retryrs_http_classify_request("patch", "k-1", RETRYRS_HTTP_NETWORK_FAILED, 0, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_TRANSIENT);
  CHECK_STATUS(retryrs_http_classify_request("POST", NULL, RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_SUCCESS);
  CHECK_STATUS(retryrs_http_classify_request("POST", "  ", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_SUCCESS); /* a blank key does not count */
  /* The key changes the method rule, not the status list. */
  CHECK_STATUS(retryrs_http_classify_request("POST", "k-1", RETRYRS_HTTP_RESPONSE, 404, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_SUCCESS);
  /* The old function never sees a header: a POST stays a response. */
  CHECK_STATUS(retryrs_http_classify("POST", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_SUCCESS);
  /* Bad arguments are named, with this function's name. */
  v = -1;
  CHECK_STATUS(retryrs_http_classify_request(NULL, "k", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "retryrs_http_classify_request: method") != NULL);
  CHECK_STATUS(retryrs_http_classify_request("POST", "k", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "verdict") != NULL);
  CHECK_STATUS(retryrs_http_classify_request("POST", "k", 7, 503, NULL, 0, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "outcome") != NULL);
  CHECK_STATUS(retryrs_http_classify_request("POST", "k", RETRYRS_HTTP_RESPONSE, 503, NULL, 1, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "retry_methods") != NULL);
  CHECK(v == -1); /* never written on failure */
}

static void test_budget_values_that_truncate_to_nothing_are_named(void) {
  retryrs_budget *b = NULL;
  CHECK_STATUS(retryrs_budget_new(1e-9, 1e-9, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "max_tokens") != NULL);
  CHECK_STATUS(retryrs_budget_new(10, 0.0004, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "token_ratio") != NULL);
  CHECK(b == NULL);
}

/* ---- calls driven from their own callbacks ---------------------------------------- */

static retryrs_retrier *zero_delay_retrier(uint64_t attempts) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  CHECK_STATUS(retryrs_config_default(&c), RETRYRS_OK);
  c.max_attempts = attempts;
  c.initial_delay_ms = 0;
  c.max_delay_ms = 0;
  c.jitter = RETRYRS_JITTER_NONE;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  return r;
}

typedef struct {
  retryrs_call *call;
  int retrying_seen, terminal_seen;
  retryrs_status inner[3];
  char message[3][256];
} reentry;

static void reenter(void *user_data, const retryrs_event *e) {
  reentry *st = (reentry *)user_data;
  retryrs_step step;
  if (e->kind == RETRYRS_EVENT_RETRYING && !st->retrying_seen) {
    st->retrying_seen = 1;
    /* All three drivers, from inside the call's own RETRYING event. */
    st->inner[0] = retryrs_call_report(st->call, RETRYRS_PERMANENT, -1, 0, &step);
    snprintf(st->message[0], sizeof st->message[0], "%s", retryrs_last_error());
    st->inner[1] = retryrs_call_after_wait(st->call, 0, &step);
    snprintf(st->message[1], sizeof st->message[1], "%s", retryrs_last_error());
    st->inner[2] = retryrs_call_cancel(st->call, 0, &step);
    snprintf(st->message[2], sizeof st->message[2], "%s", retryrs_last_error());
  }
  if (e->kind == RETRYRS_EVENT_SUCCESS || e->kind == RETRYRS_EVENT_REJECTED || e->kind == RETRYRS_EVENT_EXHAUSTED ||
      e->kind == RETRYRS_EVENT_CANCELLED)
    st->terminal_seen++;
}

static void test_a_call_driven_from_its_own_callback_is_refused(void) {
  retryrs_retrier *r = zero_delay_retrier(3);
  reentry st;
  memset(&st, 0, sizeof st);
  retryrs_listener l = {reenter, &st};
  retryrs_step step;
  CHECK_STATUS(retryrs_call_start(r, 0, &l, &st.call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_report(st.call, RETRYRS_TRANSIENT, -1, 0, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_RETRY);
  const char *names[3] = {"retryrs_call_report", "retryrs_call_after_wait", "retryrs_call_cancel"};
  for (int i = 0; i < 3; i++) {
    CHECK_STATUS(st.inner[i], RETRYRS_INVALID_ARGUMENT);
    CHECK(strstr(st.message[i], names[i]) != NULL);
    CHECK(strstr(st.message[i], "own callbacks") != NULL);
  }
  CHECK(st.terminal_seen == 0); /* no second terminal event behind the driver's back */
  /* The call is intact: it goes on exactly as if nothing had been tried. */
  CHECK_STATUS(retryrs_call_after_wait(st.call, 0, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_ATTEMPT && step.attempt == 2);
  CHECK_STATUS(retryrs_call_report(st.call, RETRYRS_SUCCESS, -1, 0, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_STOP && step.outcome == RETRYRS_OK);
  CHECK(st.terminal_seen == 1);
  retryrs_call_free(st.call);
  retryrs_retrier_free(r);
}

typedef struct {
  retryrs_call *call;
  int frees;
} freer;

static void free_on_end(void *user_data, const retryrs_event *e) {
  freer *f = (freer *)user_data;
  if (e->kind == RETRYRS_EVENT_SUCCESS || e->kind == RETRYRS_EVENT_CANCELLED) {
    retryrs_call_free(f->call); /* deferred until the driver returns */
    f->frees++;
  }
}

static void test_a_free_inside_the_calls_own_event_is_deferred(void) {
  retryrs_retrier *r = zero_delay_retrier(3);
  freer f = {NULL, 0};
  retryrs_listener l = {free_on_end, &f};
  retryrs_step step;
  /* Freed from its SUCCESS event: the report returns normally, and valgrind sees no
   * invalid access and no leak. */
  CHECK_STATUS(retryrs_call_start(r, 0, &l, &f.call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_report(f.call, RETRYRS_SUCCESS, -1, 0, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_STOP && step.outcome == RETRYRS_OK && f.frees == 1);
  /* Freed from its CANCELLED event, during a wait. */
  CHECK_STATUS(retryrs_call_start(r, 0, &l, &f.call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_report(f.call, RETRYRS_TRANSIENT, -1, 0, &step), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_cancel(f.call, 0, &step), RETRYRS_OK);
  CHECK(step.outcome == RETRYRS_CANCELLED && f.frees == 2);
  retryrs_retrier_free(r);
}

/* A blocking call on one thread while another thread frees its retrier. */
typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int started, freed;
  retryrs_retrier *retrier;
  int names_ok, events;
} handoff;

static retryrs_verdict wait_for_the_free(void *user_data, uint32_t attempt, double *hint_ms) {
  handoff *h = (handoff *)user_data;
  (void)hint_ms;
  if (attempt == 1) {
    pthread_mutex_lock(&h->lock);
    h->started = 1;
    pthread_cond_broadcast(&h->cond);
    while (!h->freed) pthread_cond_wait(&h->cond, &h->lock);
    pthread_mutex_unlock(&h->lock);
  }
  return attempt < 3 ? RETRYRS_TRANSIENT : RETRYRS_SUCCESS;
}

static void count_named(void *user_data, const retryrs_event *e) {
  handoff *h = (handoff *)user_data;
  h->events++;
  h->names_ok += strcmp(e->name, "shared") == 0; /* the name lives in the freed retrier */
}

static void *run_blocking(void *arg) {
  handoff *h = (handoff *)arg;
  retryrs_listener l = {count_named, h};
  retryrs_outcome out;
  retryrs_status st = retryrs_retrier_call(h->retrier, wait_for_the_free, h, &l, NULL, &out);
  return (void *)(intptr_t)(st == RETRYRS_OK && out.attempts == 3);
}

static void test_freeing_the_retrier_mid_call_on_another_thread_is_safe(void) {
  retryrs_config c;
  handoff h;
  memset(&h, 0, sizeof h);
  pthread_mutex_init(&h.lock, NULL);
  pthread_cond_init(&h.cond, NULL);
  CHECK_STATUS(retryrs_config_default(&c), RETRYRS_OK);
  c.initial_delay_ms = 0;
  c.max_delay_ms = 0;
  c.name = "shared";
  CHECK_STATUS(retryrs_retrier_new(&c, &h.retrier), RETRYRS_OK);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, run_blocking, &h) == 0);
  pthread_mutex_lock(&h.lock);
  while (!h.started) pthread_cond_wait(&h.cond, &h.lock);
  retryrs_retrier_free(h.retrier); /* the running call holds its own reference */
  h.retrier = NULL;
  h.freed = 1;
  pthread_cond_broadcast(&h.cond);
  pthread_mutex_unlock(&h.lock);
  void *ok = NULL;
  CHECK(pthread_join(t, &ok) == 0);
  CHECK(ok != NULL);
  CHECK(h.events == 5 && h.names_ok == 5); /* 2 x (failed, retrying), success */
  pthread_cond_destroy(&h.cond);
  pthread_mutex_destroy(&h.lock);
}

void contract_v2_tests(void) {
  h_run("verdicts and event kinds are enums with their old values", test_verdicts_and_event_kinds_keep_their_values);
  h_run("a call driven from its own callback is refused", test_a_call_driven_from_its_own_callback_is_refused);
  h_run("a free inside the call's own event is deferred", test_a_free_inside_the_calls_own_event_is_deferred);
  h_run("freeing the retrier mid-call on another thread is safe", test_freeing_the_retrier_mid_call_on_another_thread_is_safe);
  h_run("http classify follows the contract", test_http_classify_follows_the_contract);
  h_run("http classify rejects bad arguments by name", test_http_classify_rejects_bad_arguments_by_name);
  h_run("http classify_request honours an Idempotency-Key", test_http_classify_request_honours_an_idempotency_key);
  h_run("budget values that truncate to nothing are named", test_budget_values_that_truncate_to_nothing_are_named);
}
