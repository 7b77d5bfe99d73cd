/* Retry metrics in C with no new dependency: an event callback feeding counters, which
 * whatever exports the program's metrics (Prometheus text, StatsD, a log line) reads.
 * The README's C observability example; `make test-c` builds it with pkg-config and
 * runs it on the scenario of tests/observability/scenario.json (two failures then
 * success, one exhaustion by attempts, one rejection), in virtual time. */
#include <retryrs.h>
#include <retryrs_testing.h> /* the scenario runs in virtual time */
#include <stdatomic.h>
#include <stdio.h>

/* The same series as retryrs_calls_total{outcome, reason}, retryrs_retries_total and
 * the sum of retryrs_retry_delay_seconds in Python and Node (docs/observability.md).
 * Atomics: one set of counters may serve calls on many threads. */
typedef struct retry_counters {
  atomic_ulong calls[RETRYRS_EVENT_CANCELLED + 1]; /* by ending event: success, rejected, exhausted, cancelled */
  atomic_ulong exhausted[RETRYRS_REASON_RETRY_AFTER + 1]; /* by reason: attempts, deadline, budget, retry_after */
  atomic_ulong retries;
  atomic_ullong retry_wait_ms;
} retry_counters;

static void count_event(void *user_data, const retryrs_event *ev) {
  retry_counters *c = user_data;
  switch (ev->kind) {
  case RETRYRS_EVENT_RETRYING:
    atomic_fetch_add(&c->retries, 1);
    atomic_fetch_add(&c->retry_wait_ms, ev->delay_ms);
    break;
  case RETRYRS_EVENT_EXHAUSTED:
    if (ev->reason >= 0 && ev->reason <= RETRYRS_REASON_RETRY_AFTER) atomic_fetch_add(&c->exhausted[ev->reason], 1);
    atomic_fetch_add(&c->calls[ev->kind], 1);
    break;
  case RETRYRS_EVENT_SUCCESS:
  case RETRYRS_EVENT_REJECTED:
  case RETRYRS_EVENT_CANCELLED:
    atomic_fetch_add(&c->calls[ev->kind], 1);
    break;
  default: /* RETRYRS_EVENT_ATTEMPT_FAILED: counted by the event that follows */
    break;
  }
}

/* A scripted attempt: each character of the script is one attempt's verdict. */
static retryrs_verdict scripted(void *user_data, uint32_t attempt, double *hint_ms) {
  const char *script = user_data;
  (void)hint_ms;
  switch (script[attempt - 1]) {
  case 'T': return RETRYRS_TRANSIENT;
  case 'P': return RETRYRS_PERMANENT;
  default: return RETRYRS_SUCCESS;
  }
}

int main(void) {
  static retry_counters counters; /* zeroed: static storage */
  retryrs_listener listener = {count_event, &counters};
  retryrs_config config;
  retryrs_retrier *retrier = NULL;
  retryrs_outcome out;
  const char *scripts[] = {"TTS", "TTT", "P"};
  int ok;

  retryrs_config_default(&config);
  config.name = "pay";
  config.max_attempts = 3;
  config.initial_delay_ms = 100;
  config.jitter = RETRYRS_JITTER_NONE;
  config.has_deadline = false;
  if (retryrs_retrier_new(&config, &retrier) != RETRYRS_OK) {
    fprintf(stderr, "%s\n", retryrs_last_error());
    return 1;
  }
  retryrs_testing_enable(); /* the 600 ms of waits take none */
  for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++)
    (void)retryrs_retrier_call(retrier, scripted, (void *)scripts[i], &listener, NULL, &out);
  retryrs_testing_disable();
  retryrs_retrier_free(retrier);

  printf("calls: success %lu, rejected %lu, exhausted (attempts) %lu; retries %lu, waited %llu ms\n",
         atomic_load(&counters.calls[RETRYRS_EVENT_SUCCESS]), atomic_load(&counters.calls[RETRYRS_EVENT_REJECTED]),
         atomic_load(&counters.exhausted[RETRYRS_REASON_ATTEMPTS]), atomic_load(&counters.retries),
         atomic_load(&counters.retry_wait_ms));
  ok = counters.calls[RETRYRS_EVENT_SUCCESS] == 1 && counters.calls[RETRYRS_EVENT_REJECTED] == 1 &&
       counters.calls[RETRYRS_EVENT_EXHAUSTED] == 1 && counters.exhausted[RETRYRS_REASON_ATTEMPTS] == 1 &&
       counters.calls[RETRYRS_EVENT_CANCELLED] == 0 && counters.retries == 4 && counters.retry_wait_ms == 600;
  return ok ? 0 : 1;
}
