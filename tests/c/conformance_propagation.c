/* The C runner of the propagation vectors (tests/conformance/propagation.json): each case
 * asked of the C API, and a constrain case run as a blocking call inside an entered
 * context, on virtual time. */
#include <stdio.h>
#include <string.h>

#include "conformance.h"
#include "retryrs_testing.h"

static char wrong[1200];

static const char *say(const char *fmt, unsigned long long got, unsigned long long want) {
  snprintf(wrong, sizeof wrong, fmt, got, want);
  return wrong;
}

static const char *api(const char *what) {
  snprintf(wrong, sizeof wrong, "%s: %s", what, retryrs_last_error());
  return wrong;
}

static const char *inbound(const cv_prop *p) {
  retryrs_context *ctx = NULL;
  uint64_t budget = 0;
  bool is_retry = false, clamped = false;
  uint32_t malformed = 0;
  const char *res = NULL;
  uint32_t flags = p->trust_mesh ? RETRYRS_CONTEXT_TRUST_MESH : 0;
  if (retryrs_context_parse(p->names, p->values, p->n_headers, p->limit_ms, flags, &ctx) != RETRYRS_OK)
    return api("retryrs_context_parse");
  if (retryrs_context_get(ctx, NULL, &budget, &is_retry, &clamped, &malformed) != RETRYRS_OK) res = api("retryrs_context_get");
  else if (budget != p->budget_ms) res = say("budget_ms %llu, want %llu", budget, p->budget_ms);
  else if (is_retry != (p->expect_is_retry != 0)) res = say("is_retry %llu, want %llu", is_retry, p->expect_is_retry);
  else if (clamped != (p->clamped != 0)) res = say("clamped %llu, want %llu", clamped, p->clamped);
  else if (malformed != p->malformed) res = say("malformed %llu, want %llu", malformed, p->malformed);
  retryrs_context_free(ctx);
  return res;
}

typedef struct {
  uint32_t attempts;
  uint64_t first_bound;
} inside_state;

static retryrs_verdict always_transient(void *user_data, uint32_t attempt, double *hint_ms) {
  inside_state *st = (inside_state *)user_data;
  uint64_t bound = 0;
  (void)hint_ms;
  st->attempts = attempt;
  if (attempt == 1 && retryrs_attempt_remaining_ms(&bound) == RETRYRS_OK) st->first_bound = bound;
  return RETRYRS_TRANSIENT;
}

/* Inside the context, every attempt failing at once (the vectors' policies wait 0 ms, and
 * virtual time stands still): the first bound is the deadline, and every attempt the
 * limit allows runs. */
static const char *constrain(const cv_prop *p, const cv_policy *policy) {
  retryrs_policies *doc = NULL;
  const retryrs_budget *budget = NULL;
  retryrs_breaker *breaker = NULL;
  retryrs_retrier *r = NULL;
  retryrs_context *ctx = NULL;
  inside_state st = {0, 0};
  const char *res = NULL;
  if (cv_make_retrier(policy, &doc, &budget, &breaker, &r) != RETRYRS_OK) res = api("building the retrier");
  else {
    retryrs_testing_enable();
    if (retryrs_context_new(p->left_ms, p->is_retry != 0, &ctx) != RETRYRS_OK) res = api("retryrs_context_new");
    else if (retryrs_context_enter(ctx) != RETRYRS_OK) res = api("retryrs_context_enter");
    else {
      retryrs_context_free(ctx); /* entering copied it */
      ctx = NULL;
      retryrs_retrier_call(r, always_transient, &st, NULL, NULL, NULL);
      if (retryrs_context_leave() != RETRYRS_OK) res = api("retryrs_context_leave");
      else if (st.first_bound != p->deadline_ms) res = say("first bound %llu, want the deadline %llu", st.first_bound, p->deadline_ms);
      else if (st.attempts != p->max_attempts) res = say("%llu attempts, want %llu", st.attempts, p->max_attempts);
    }
    retryrs_testing_disable();
  }
  retryrs_context_free(ctx);
  retryrs_retrier_free(r);
  retryrs_breaker_free(breaker);
  retryrs_policies_free(doc);
  return res;
}

static const char *outbound(const cv_prop *p) {
  char buf[512];
  size_t len = 0;
  if (retryrs_context_outbound(p->left_ms, p->attempt, p->is_retry != 0, p->mesh, p->kind, buf, sizeof buf, &len) != RETRYRS_OK)
    return api("retryrs_context_outbound");
  if (len != strlen(buf) || strcmp(buf, p->headers_text) != 0) {
    snprintf(wrong, sizeof wrong, "headers \"%.500s\", want \"%.500s\"", buf, p->headers_text);
    return wrong;
  }
  return NULL;
}

static retryrs_verdict verdict_of(const char *name) {
  if (strcmp(name, "retry") == 0) return RETRYRS_TRANSIENT;
  if (strcmp(name, "response") == 0) return RETRYRS_SUCCESS;
  if (strcmp(name, "dont_retry") == 0) return RETRYRS_DONT_RETRY;
  return RETRYRS_PERMANENT; /* "fail" */
}

static const char *pushback(const cv_prop *p) {
  int kind = -1;
  uint64_t wait = 0;
  retryrs_verdict v = verdict_of(p->verdict_in);
  double hint = -1.0;
  if (retryrs_read_pushback(p->names, p->values, p->n_headers, &kind, &wait) != RETRYRS_OK)
    return api("retryrs_read_pushback");
  if (kind != p->pushback) return say("pushback kind %llu, want %llu", (unsigned)kind, (unsigned)p->pushback);
  if (kind == RETRYRS_PUSHBACK_WAIT && wait != p->pushback_ms) return say("pushback wait %llu, want %llu", wait, p->pushback_ms);
  if (retryrs_http_pushback(&v, p->names, p->values, p->n_headers, &hint) != RETRYRS_OK) return api("retryrs_http_pushback");
  if (v != verdict_of(p->verdict)) return say("verdict %llu, want %llu", (unsigned)v, (unsigned)verdict_of(p->verdict));
  if (p->wait_ms == UINT64_MAX ? hint != -1.0 : hint != (double)p->wait_ms)
    return say("wait %llu, want %llu", (unsigned long long)hint, p->wait_ms);
  return NULL;
}

static const char *upward(const cv_prop *p) {
  retryrs_gate *gate = NULL;
  size_t i, at = 0;
  const char *res = NULL;
  if (retryrs_gate_new(15000, p->observe_only ? RETRYRS_CONTEXT_OBSERVE_ONLY : 0, &gate) != RETRYRS_OK)
    return api("retryrs_gate_new");
  for (i = 0; i < p->n_requests && !res; i++) {
    retryrs_context *ctx = NULL;
    retryrs_upward up = -1;
    size_t n = p->request_sizes[i];
    if (retryrs_gate_receive(gate, n ? p->names + at : NULL, n ? p->values + at : NULL, n, &ctx, &up) != RETRYRS_OK)
      res = api("retryrs_gate_receive");
    else if (up != p->upward[i]) res = say("upward %llu, want %llu", (unsigned)up, (unsigned)p->upward[i]);
    retryrs_context_free(ctx);
    at += n;
  }
  retryrs_gate_free(gate);
  return res;
}

static const char *allowlist(const cv_prop *p) {
  bool allowed = false;
  if (retryrs_host_allowed(p->has_hosts ? p->hosts : NULL, p->n_hosts, p->host, &allowed) != RETRYRS_OK)
    return api("retryrs_host_allowed");
  return allowed == (p->allows != 0) ? NULL : say("allows %llu, want %llu", allowed, p->allows);
}

const char *cv_run_propagation(const cv_prop *p, const cv_policy *policy) {
  if (strcmp(p->which, "inbound") == 0) return inbound(p);
  if (strcmp(p->which, "margin") == 0) {
    uint64_t m = retryrs_context_margin_ms(p->left_ms);
    return m == p->margin_ms ? NULL : say("margin %llu, want %llu", m, p->margin_ms);
  }
  if (strcmp(p->which, "constrain") == 0) return constrain(p, policy);
  if (strcmp(p->which, "outbound") == 0) return outbound(p);
  if (strcmp(p->which, "pushback") == 0) return pushback(p);
  if (strcmp(p->which, "upward") == 0) return upward(p);
  if (strcmp(p->which, "allowlist") == 0) return allowlist(p);
  snprintf(wrong, sizeof wrong, "unknown propagation case %s", p->which);
  return wrong;
}
