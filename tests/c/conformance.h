/* The conformance vectors as C data (generated into build/c/vectors.c by gen_vectors.py)
 * and the runner that checks them against the C API. */
#ifndef RETRYRS_TESTS_CONFORMANCE_H
#define RETRYRS_TESTS_CONFORMANCE_H

#include <stddef.h>
#include <stdint.h>

#include "retryrs.h"

/* The vector's policy as a policy document (docs/policies.md) whose one policy is
 * "retry": the runner loads it with retryrs_policies_from_json, as a service would. */
typedef struct {
  const char *document;
  /* A gRPC service config: its pushback rule is not a knob, so the retrier comes straight
   * from the document (retryrs_policies_retrier), not from a retryrs_config copy. */
  int service_config;
  /* The policy hedges: the call runs through retryrs_hedge_* (blocking calls cannot
   * hedge), and the retrier comes from the document (a retryrs_config holds no hedge). */
  int hedging;
} cv_policy;

typedef struct {
  retryrs_verdict result;
  int has_hint;
  double hint_ms;
  unsigned long long takes_ms, wait_overrun_ms;
  int cancel_during_wait;
  /* The host cut the attempt at its bound: it takes its bound, and the result is
   * RETRYRS_TIMED_OUT. */
  int timed_out;
  /* A hook vector's answer after this attempt's failure: RETRYRS_PLAN_* (and wait_ms). */
  retryrs_plan plan;
  double wait_ms;
} cv_attempt;

/* -1 / NULL: field absent, not compared. */
typedef struct {
  const char *kind;
  long long attempt, elapsed_ms, delay_ms;
  const char *reason;
  long long retries_left;
} cv_event;

typedef struct {
  const cv_attempt *attempts;
  size_t n_attempts;
  int hooked; /* a hook vector: the calls run with hooks (retryrs_retrier_call_hooked, propose/settle) */
  const char *outcome, *reason;
  long long expect_attempts;
  int has_delays;
  const long long *delays;
  size_t n_delays;
  int has_events;
  const cv_event *events;
  size_t n_events;
  int has_budget_tokens;
  double budget_tokens;
  /* When the call starts, in ms from the vector's origin (0 when the vector gives none). */
  unsigned long long at_ms;
  /* "closed", "open" or "half_open" after the call; NULL: not compared. */
  const char *breaker_state;
  int has_bounds; /* each attempt's bound at its start; UINT64_MAX: unbounded */
  const uint64_t *bounds;
  size_t n_bounds;
  long long winner; /* hedged calls: the winning attempt; -1 when none is expected */
  int has_launched; /* hedged calls: when each attempt launched, ms since the start */
  const long long *launched;
  size_t n_launched;
  int has_cancelled; /* hedged calls: the attempts cancelled at the end, bit k-1 for k */
  uint32_t cancelled;
} cv_call;

/* A propagation vector (tests/conformance/README.md, "Propagation vectors"): `which`
 * case, its inputs and what it expects; UINT64_MAX stands for null in the ms fields. */
typedef struct {
  const char *which; /* "inbound", "margin", "constrain", "outbound", "pushback", "upward", "allowlist" */
  const char *const *names, *const *values; /* headers (upward: every request's, in order) */
  size_t n_headers;
  const size_t *request_sizes; /* upward: how many headers each request has */
  size_t n_requests;
  uint64_t limit_ms, left_ms;
  int trust_mesh, observe_only, is_retry;
  uint32_t attempt;
  int mesh, kind;
  const char *verdict_in;
  int has_hosts;
  const char *const *hosts;
  size_t n_hosts;
  const char *host;
  /* expected */
  uint64_t budget_ms, margin_ms, deadline_ms, pushback_ms, wait_ms;
  int expect_is_retry, clamped, allows, pushback;
  uint32_t malformed, max_attempts;
  const char *headers_text, *verdict;
  const retryrs_upward *upward;
} cv_prop;

enum { CV_CALLS, CV_ERROR, CV_RETRY_AFTER, CV_STATUS, CV_HTTP, CV_PROPAGATION };
enum { CV_RA_NONE, CV_RA_MS, CV_RA_SATURATED };

typedef struct {
  const char *id, *file;
  int kind;
  cv_policy policy;
  const cv_call *calls;
  size_t n_calls;
  const char *knob;
  const char *ra_value;
  long long ra_now_unix_s;
  int ra_expect;
  unsigned long long ra_expect_ms;
  int status_code, status_retryable;
  const char *http_method, *http_expect; /* expect: "retry", "response" or "fail" */
  const char *http_idempotency_key;      /* NULL: the request has no Idempotency-Key */
  retryrs_http_outcome http_outcome;
  int32_t http_status;
  int has_http_methods, has_http_statuses; /* 0: the default list (NULL) */
  const char *const *http_methods;
  size_t n_http_methods;
  const int32_t *http_statuses;
  size_t n_http_statuses;
  const cv_prop *prop;
} cv_vector;

extern const cv_vector cv_vectors[];
extern const size_t cv_vector_count;
/* Vectors the C runner cannot run yet (hedging), by file:id, and why: counted as skipped. */
extern const char *const cv_skipped[];
extern const size_t cv_skipped_count;
extern const char *const cv_skip_reason;

/* Checks a propagation vector (conformance_propagation.c); `policy` is the vector's (its
 * retrier built by cv_make_retrier) for a constrain case. Returns NULL when it passes,
 * else what was wrong. */
const char *cv_run_propagation(const cv_prop *p, const cv_policy *policy);

/* The vector's policy through the document loader (conformance.c); `*doc` owns the
 * budget the retrier shares, freed by the caller with the retrier and the breaker. */
retryrs_status cv_make_retrier(const cv_policy *p, retryrs_policies **doc, const retryrs_budget **budget,
                               retryrs_breaker **breaker, retryrs_retrier **out);

/* Runs every vector through the blocking call and the sans-IO engine; prints failures
 * and "conformance: N passed, M failed"; writes "c N M" to report_path if not NULL.
 * Returns the number of failed vectors. */
int run_conformance(const char *report_path);

#endif
