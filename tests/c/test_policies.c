/* Policy documents in C: the shared document gives the policies and waits every host gets
 * (tests/policies/, generated into C by gen_policies.py), every error case names the same
 * path, gRPC's example service config, hostile input, NULLs. Runs under valgrind. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "policies_data.h"
#include "retryrs.h"
#include "retryrs_testing.h"
#include "suites.h"

static int contains(const char *haystack, const char *needle) { return strstr(haystack, needle) != NULL; }

static retryrs_verdict always_fails(void *user_data, uint32_t attempt, double *hint_ms) {
  (void)user_data;
  (void)attempt;
  (void)hint_ms;
  return RETRYRS_TRANSIENT;
}

typedef struct {
  size_t n;
  uint64_t waits[16];
} waits_log;

static void log_wait(void *user_data, const retryrs_event *event) {
  waits_log *log = (waits_log *)user_data;
  if (event->kind == RETRYRS_EVENT_RETRYING && log->n < 16) log->waits[log->n++] = event->delay_ms;
}

/* The waits of a call under `config` whose every attempt fails, in virtual time. */
static waits_log waits_of(const retryrs_config *config) {
  waits_log log;
  retryrs_retrier *r = NULL;
  retryrs_listener l = {log_wait, &log};
  retryrs_outcome out;
  memset(&log, 0, sizeof log);
  CHECK_STATUS(retryrs_retrier_new(config, &r), RETRYRS_OK);
  retryrs_testing_enable();
  CHECK_STATUS(retryrs_retrier_call(r, always_fails, NULL, &l, NULL, &out), RETRYRS_EXHAUSTED);
  retryrs_testing_disable();
  retryrs_retrier_free(r);
  return log;
}

static retryrs_policies *load(const char *json) {
  retryrs_policies *p = NULL;
  CHECK_STATUS(retryrs_policies_from_json(json, strlen(json), &p), RETRYRS_OK);
  return p;
}

static void test_the_shared_document_gives_every_host_s_policies(void) {
  size_t i, j;
  for (i = 0; i < POLICY_EXPECTED_COUNT; i++) {
    const policy_expectation *e = &POLICY_EXPECTED[i];
    retryrs_policies *p = load(POLICY_DOC_SHARED); /* fresh: the shared budget is full */
    retryrs_config c;
    retryrs_jitter jitter;
    double factor;
    if (p == NULL) return;
    CHECK_STATUS(retryrs_policies_get(p, e->key, &c), RETRYRS_OK);
    CHECK(c.max_attempts == e->max_attempts);
    CHECK(c.initial_delay_ms == e->initial_delay_ms);
    CHECK(c.multiplier == e->multiplier);
    CHECK(c.max_delay_ms == e->max_delay_ms);
    CHECK_STATUS(retryrs_jitter_parse(e->jitter, &jitter, &factor), RETRYRS_OK);
    CHECK(c.jitter == jitter && c.jitter_factor == factor);
    CHECK(c.has_deadline == (e->has_deadline != 0));
    if (e->has_deadline) CHECK(c.deadline_ms == e->deadline_ms);
    CHECK(c.has_max_retry_after == (e->has_max_retry_after != 0));
    if (e->has_max_retry_after) CHECK(c.max_retry_after_ms == e->max_retry_after_ms);
    CHECK(c.has_seed == (e->has_seed != 0) && (!e->has_seed || c.seed == e->seed));
    CHECK(strcmp(c.name, e->name) == 0);
    CHECK((c.budget != NULL) == (e->has_budget != 0));
    {
      waits_log log = waits_of(&c);
      CHECK(log.n == e->waits_len);
      for (j = 0; j < log.n && j < e->waits_len; j++) CHECK(log.waits[j] == e->waits[j]);
    }
    retryrs_policies_free(p);
  }
}

static void test_a_budget_named_twice_is_one_bucket_and_outlives_the_document(void) {
  retryrs_policies *p = load(POLICY_DOC_SHARED);
  retryrs_config payments, rates;
  retryrs_retrier *r = NULL;
  double tokens = 0;
  waits_log log;
  if (p == NULL) return;
  CHECK_STATUS(retryrs_policies_get(p, "payments", &payments), RETRYRS_OK);
  CHECK_STATUS(retryrs_policies_get(p, "rates", &rates), RETRYRS_OK);
  CHECK(payments.budget != NULL && payments.budget == rates.budget);
  CHECK_STATUS(retryrs_retrier_new(&rates, &r), RETRYRS_OK);
  waits_of(&payments);
  CHECK_STATUS(retryrs_budget_tokens(payments.budget, &tokens), RETRYRS_OK);
  CHECK(tokens == POLICY_TOKENS_AFTER_PAYMENTS);
  log = waits_of(&rates);
  CHECK(log.n == POLICY_RATES_WAITS_AFTER_PAYMENTS);
  /* The retrier keeps its budget and name: freeing the document first is fine. */
  retryrs_policies_free(p);
  {
    retryrs_outcome out;
    retryrs_testing_enable();
    CHECK_STATUS(retryrs_retrier_call(r, always_fails, NULL, NULL, NULL, &out), RETRYRS_EXHAUSTED);
    retryrs_testing_disable();
    CHECK(out.attempts == 1 && out.reason == RETRYRS_REASON_BUDGET);
  }
  retryrs_retrier_free(r);
}

static void test_names_and_lookups(void) {
  retryrs_policies *p = load(POLICY_DOC_SHARED);
  retryrs_config c;
  if (p == NULL) return;
  CHECK(retryrs_policies_count(p) == 4);
  CHECK(strcmp(retryrs_policies_name(p, 0), "default") == 0);
  CHECK(strcmp(retryrs_policies_name(p, 1), "ledger") == 0); /* the key, not its name knob */
  CHECK(retryrs_policies_name(p, 4) == NULL);
  CHECK_STATUS(retryrs_policies_get(p, "pay", &c), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "no policy \"pay\"") && contains(retryrs_last_error(), "payments"));
  CHECK_STATUS(retryrs_policies_get(p, NULL, &c), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_policies_config(p, "payments", NULL, sizeof c), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_policies_config(p, "payments", &c, 3), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "retryrs_policies_config: struct_size is 3"));
  CHECK_STATUS(retryrs_policies_get(p, "payments", &c), RETRYRS_OK);
  CHECK(c.struct_size == sizeof c);
  CHECK_STATUS(retryrs_policies_get(NULL, "payments", &c), RETRYRS_INVALID_ARGUMENT);
  CHECK(retryrs_policies_count(NULL) == 0 && retryrs_policies_name(NULL, 0) == NULL);
  retryrs_policies_free(p);
  retryrs_policies_free(NULL);
}

static void test_every_error_names_its_path(void) {
  size_t i;
  for (i = 0; i < POLICY_ERROR_COUNT; i++) {
    const policy_error_case *e = &POLICY_ERRORS[i];
    retryrs_policies *p = (retryrs_policies *)&p; /* must be left alone on failure */
    retryrs_policies *before = p;
    CHECK_STATUS(retryrs_policies_from_json(e->document, strlen(e->document), &p), RETRYRS_INVALID_ARGUMENT);
    if (!contains(retryrs_last_error(), e->path) || !contains(retryrs_last_error(), e->fragment)) {
      fprintf(stderr, "  case %s: %s\n", e->name, retryrs_last_error());
      CHECK(0);
    }
    CHECK(p == before);
  }
}

static void test_hostile_input_and_nulls(void) {
  const size_t huge = 100u * 1024u * 1024u;
  char *text = (char *)malloc(huge + 64);
  retryrs_policies *p = NULL;
  if (text != NULL) {
    memcpy(text, "{\"policies\": {\"p\": {\"name\": \"", 29);
    memset(text + 29, 'x', huge);
    memcpy(text + 29 + huge, "\"}}}", 4);
    CHECK_STATUS(retryrs_policies_from_json(text, huge + 33, &p), RETRYRS_INVALID_ARGUMENT);
    CHECK(contains(retryrs_last_error(), "more than the 16777216"));
    free(text);
  }
  CHECK_STATUS(retryrs_policies_from_json("{\"policies\": {}}\xff", 17, &p), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "not UTF-8"));
  CHECK_STATUS(retryrs_policies_from_json(NULL, 0, &p), RETRYRS_INVALID_ARGUMENT);
  CHECK(contains(retryrs_last_error(), "json must not be NULL"));
  CHECK_STATUS(retryrs_policies_from_json("{}", 2, NULL), RETRYRS_INVALID_ARGUMENT);
  /* len, not a NUL, ends the text: a document followed by garbage loads. */
  CHECK_STATUS(retryrs_policies_from_json("{\"policies\": {}}garbage", 16, &p), RETRYRS_OK);
  CHECK(retryrs_policies_count(p) == 0);
  retryrs_policies_free(p);
}

static void test_grpc_s_example_service_config(void) {
  retryrs_policies *p = load(POLICY_DOC_GRPC_SERVICE_CONFIG);
  retryrs_config echo, stream;
  waits_log log;
  size_t i;
  if (p == NULL) return;
  CHECK_STATUS(retryrs_policies_get(p, "EchoService", &echo), RETRYRS_OK);
  CHECK_STATUS(retryrs_policies_get(p, "EchoService/Stream", &stream), RETRYRS_OK);
  CHECK(echo.max_attempts == 4 && echo.initial_delay_ms == 100 && echo.max_delay_ms == 1000 && echo.multiplier == 2);
  CHECK(echo.jitter == RETRYRS_JITTER_PROPORTIONAL && echo.jitter_factor == 0.2 && !echo.has_deadline);
  CHECK(!echo.has_max_retry_after);
  CHECK(stream.max_attempts == 5 && stream.has_deadline && stream.deadline_ms == 2500);
  CHECK(echo.budget != NULL && echo.budget == stream.budget);
  log = waits_of(&echo);
  CHECK(log.n == 3);
  for (i = 0; i < log.n; i++) CHECK(log.waits[i] >= 80 && log.waits[i] <= (uint64_t)(120u << i));
  retryrs_policies_free(p);
}

static retryrs_verdict pushes_back_30_ms(void *user_data, uint32_t attempt, double *hint_ms) {
  (void)user_data;
  (void)attempt;
  *hint_ms = 30;
  return RETRYRS_TRANSIENT;
}

static void test_grpc_lookup_warnings_and_pushback(void) {
  static const char json[] =
      "{\"methodConfig\": ["
      "{\"name\": [{\"service\": \"S\"}], \"retryPolicy\": {\"maxAttempts\": 3, \"initialBackoff\": \"1s\","
      " \"maxBackoff\": \"2s\", \"backoffMultiplier\": 2, \"retryableStatusCodes\": [\"UNAVAILABLE\"]}},"
      "{\"name\": [{\"service\": \"S\", \"method\": \"Delete\"}], \"timeout\": \"2s\"},"
      "{\"timeout\": \"1s\"}],"
      " \"retryThrottling\": {\"maxTokens\": 10, \"tokenRatio\": 0.0001}}";
  retryrs_policies *p = load(json);
  retryrs_config del;
  retryrs_retrier *r = NULL;
  waits_log log;
  retryrs_listener l = {log_wait, &log};
  retryrs_outcome out;
  const char *key;
  if (p == NULL) return;
  /* gRPC's order: service/method, then the service, then the default (none here). */
  key = retryrs_policies_lookup(p, "S", "Delete");
  CHECK(key != NULL && strcmp(key, "S/Delete") == 0);
  CHECK_STATUS(retryrs_policies_get(p, key, &del), RETRYRS_OK);
  CHECK(del.max_attempts == 1 && del.has_deadline && del.deadline_ms == 2000);
  key = retryrs_policies_lookup(p, "S", "Get");
  CHECK(key != NULL && strcmp(key, "S") == 0);
  CHECK(retryrs_policies_lookup(p, "T", "Get") == NULL);
  CHECK(retryrs_policies_lookup(p, NULL, "Get") == NULL && contains(retryrs_last_error(), "service"));
  /* Valid but probably not meant: in document order, each starting with its path. */
  CHECK(retryrs_policies_warning_count(p) == 2);
  CHECK(contains(retryrs_policies_warning(p, 0), "retryThrottling.tokenRatio"));
  CHECK(contains(retryrs_policies_warning(p, 1), "methodConfig[2]: names no method"));
  CHECK(retryrs_policies_warning(p, 2) == NULL && retryrs_policies_warning(NULL, 0) == NULL);
  /* The retrier from the document keeps A6's pushback: exactly 30 ms each time. */
  CHECK_STATUS(retryrs_policies_retrier(p, "S", &r), RETRYRS_OK);
  CHECK_STATUS(retryrs_policies_retrier(p, "nope", &r), RETRYRS_INVALID_ARGUMENT);
  memset(&log, 0, sizeof log);
  retryrs_testing_enable();
  CHECK_STATUS(retryrs_retrier_call(r, pushes_back_30_ms, NULL, &l, NULL, &out), RETRYRS_EXHAUSTED);
  retryrs_testing_disable();
  CHECK(log.n == 2 && log.waits[0] == 30 && log.waits[1] == 30);
  retryrs_retrier_free(r);
  retryrs_policies_free(p);
}

/* A hedged call driven by hand from a document's hedge: what the conformance vectors
 * check, plus the misuse a C program can make of it. */
static int hedge_events;
static retryrs_hedge *hedge_in_listener;

static void count_and_reenter(void *user_data, const retryrs_event *e) {
  retryrs_hedge_step step;
  (void)user_data;
  hedge_events++;
  if (e->kind == RETRYRS_EVENT_HEDGE) {
    CHECK(e->attempt == 2 && e->delay_ms == 50);
    /* Re-entry from the call's own listener is refused and changes nothing. */
    CHECK_STATUS(retryrs_hedge_poll(hedge_in_listener, 0, &step), RETRYRS_INVALID_ARGUMENT);
  }
}

static void test_a_hedged_call_driven_by_hand(void) {
  const char *doc = "{\"policies\": {\"reads\": {\"deadline\": \"1s\", \"hedge\": {\"max_attempts\": 2, \"delay\": \"50ms\"}}}}";
  retryrs_policies *p = load(doc);
  retryrs_retrier *r = NULL;
  retryrs_hedge *h = NULL;
  retryrs_hedge_step step;
  retryrs_listener l = {count_and_reenter, NULL};
  uint64_t left = 0;
  CHECK_STATUS(retryrs_policies_retrier(p, "reads", &r), RETRYRS_OK);
  CHECK_STATUS(retryrs_hedge_start(r, 1000, &l, &h), RETRYRS_OK);
  hedge_in_listener = h;
  hedge_events = 0;
  CHECK_STATUS(retryrs_hedge_report(h, 1, RETRYRS_SUCCESS, -1, 1000, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_hedge_poll(h, 1000, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_LAUNCH && step.attempt == 1);
  CHECK_STATUS(retryrs_hedge_remaining_ms(h, 1, 1010, &left), RETRYRS_OK);
  CHECK(left == 990);
  CHECK_STATUS(retryrs_hedge_remaining_ms(h, 2, 1010, &left), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_hedge_poll(h, 1000, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_WAIT && step.wake_ms == 1050);
  CHECK_STATUS(retryrs_hedge_poll(h, 1050, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_LAUNCH && step.attempt == 2);
  CHECK_STATUS(retryrs_hedge_poll(h, 1050, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_WAIT && step.wake_ms == 2001); /* only the deadline */
  CHECK_STATUS(retryrs_hedge_report(h, 2, 7, -1, 1060, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_hedge_report(h, 2, RETRYRS_SUCCESS, -1, 1060, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_WON && step.attempt == 2 && step.cancel == 1u && step.outcome == RETRYRS_OK);
  CHECK_STATUS(retryrs_hedge_report(h, 1, RETRYRS_PERMANENT, -1, 1900, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_DROPPED);
  CHECK(hedge_events == 2); /* hedge, success: the late result emitted nothing */
  CHECK_STATUS(retryrs_hedge_poll(h, 1900, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_hedge_cancel(h, 1900, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_hedge_poll(NULL, 0, &step), RETRYRS_INVALID_ARGUMENT);
  CHECK_STATUS(retryrs_hedge_poll(h, 0, NULL), RETRYRS_INVALID_ARGUMENT);
  retryrs_hedge_free(h);
  /* Cancelled with both attempts in flight: both are handed back. */
  CHECK_STATUS(retryrs_hedge_start(r, 0, NULL, &h), RETRYRS_OK);
  CHECK_STATUS(retryrs_hedge_poll(h, 0, &step), RETRYRS_OK);
  CHECK_STATUS(retryrs_hedge_poll(h, 50, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_LAUNCH && step.attempt == 2);
  CHECK_STATUS(retryrs_hedge_cancel(h, 60, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_HEDGE_STOP && step.outcome == RETRYRS_CANCELLED && step.cancel == 3u);
  retryrs_hedge_free(h);
  retryrs_hedge_free(NULL);
  /* A call that runs one attempt at a time refuses a hedging policy, and says why. */
  {
    retryrs_call *call = NULL;
    retryrs_outcome out = {0, 0};
    CHECK_STATUS(retryrs_call_start(r, 0, NULL, &call), RETRYRS_INVALID_ARGUMENT);
    CHECK(call == NULL && strstr(retryrs_last_error(), "reads: this policy hedges") != NULL);
    CHECK_STATUS(retryrs_retrier_call(r, NULL, NULL, NULL, NULL, &out), RETRYRS_INVALID_ARGUMENT);
    CHECK(strstr(retryrs_last_error(), "retryrs_hedge_start") != NULL);
  }
  retryrs_retrier_free(r);
  retryrs_policies_free(p);
}

/* A gRPC policy keeps its status codes and judges a status by them (issue 35): a method
 * limited to UNAVAILABLE does not retry INTERNAL; a hedging one's non-fatal codes. */
static void test_grpc_status_codes_are_kept(void) {
  const char *doc =
      "{\"methodConfig\": ["
      "{\"name\": [{\"service\": \"pay\"}], \"retryPolicy\": {\"maxAttempts\": 3, \"initialBackoff\": \"0.1s\","
      " \"maxBackoff\": \"1s\", \"backoffMultiplier\": 2, \"retryableStatusCodes\": [\"UNAVAILABLE\"]}},"
      "{\"name\": [{\"service\": \"reads\"}], \"hedgingPolicy\": {\"maxAttempts\": 2,"
      " \"nonFatalStatusCodes\": [13, \"ABORTED\"]}}]}";
  const char *native = "{\"policies\": {\"x\": {}}}";
  retryrs_policies *p = load(doc), *q = load(native);
  uint32_t mask = 0;
  retryrs_verdict v = -1;
  if (p == NULL || q == NULL) return;
  CHECK_STATUS(retryrs_policies_grpc_status_codes(p, "pay", &mask), RETRYRS_OK);
  CHECK(mask == (1u << 14));
  CHECK_STATUS(retryrs_policies_grpc_status_codes(p, "reads", &mask), RETRYRS_OK);
  CHECK(mask == ((1u << 13) | (1u << 10)));
  CHECK_STATUS(retryrs_policies_grpc_verdict(p, "pay", 14, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_TRANSIENT);
  CHECK_STATUS(retryrs_policies_grpc_verdict(p, "pay", (uint32_t)retryrs_grpc_status_code("INTERNAL"), &v), RETRYRS_OK);
  CHECK(v == RETRYRS_PERMANENT);
  CHECK_STATUS(retryrs_policies_grpc_verdict(p, "pay", 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_SUCCESS);
  CHECK_STATUS(retryrs_policies_grpc_verdict(p, "reads", 13, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_TRANSIENT);
  CHECK_STATUS(retryrs_policies_grpc_verdict(p, "pay", 17, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "17 is not a gRPC status code") != NULL);
  CHECK_STATUS(retryrs_policies_grpc_status_codes(q, "x", &mask), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "not loaded from a gRPC service config") != NULL);
  CHECK_STATUS(retryrs_policies_grpc_verdict(p, "pay", 14, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(retryrs_grpc_status_code("UNAVAILABLE") == 14 && retryrs_grpc_status_code("busy") == -1);
  CHECK(retryrs_grpc_status_code(NULL) == -1);
  CHECK(strcmp(retryrs_grpc_status_name(14), "UNAVAILABLE") == 0 && retryrs_grpc_status_name(17) == NULL);
  retryrs_policies_free(p);
  retryrs_policies_free(q);
}

void policies_tests(void) {
  h_run("policies: the shared document gives every host's policies", test_the_shared_document_gives_every_host_s_policies);
  h_run("policies: a budget named twice is one bucket", test_a_budget_named_twice_is_one_bucket_and_outlives_the_document);
  h_run("policies: names and lookups", test_names_and_lookups);
  h_run("policies: every error names its path", test_every_error_names_its_path);
  h_run("policies: hostile input and NULLs", test_hostile_input_and_nulls);
  h_run("policies: gRPC's example service config", test_grpc_s_example_service_config);
  h_run("policies: gRPC lookups, warnings and pushback", test_grpc_lookup_warnings_and_pushback);
  h_run("policies: a hedged call driven by hand", test_a_hedged_call_driven_by_hand);
  h_run("policies: gRPC status codes are kept", test_grpc_status_codes_are_kept);
}
