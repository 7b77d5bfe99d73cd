/* The C conformance runner: every vector of tests/conformance/ (every .json file, compiled in as a
 * table) against the real C API. Call vectors run twice, through the blocking call under
 * virtual time and through the sans-IO engine with the runner's own clock; a vector
 * passes only if both agree with it. */
#include "conformance.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "retryrs_testing.h"

#define MAX_EVENTS 256
#define MAX_BOUNDS 256

typedef struct {
  retryrs_event_kind kind;
  uint32_t attempt;
  uint64_t elapsed_ms, delay_ms;
  retryrs_reason reason;
  uint32_t retries_left;
} seen_event;

typedef struct {
  const cv_call *call;
  int blocking; /* the blocking runner applies overruns and cancels from the events */
  retryrs_cancel *cancel;
  size_t made;
  int overran;
  seen_event events[MAX_EVENTS];
  size_t n_events;
  uint64_t ended_at;         /* the engine runner's time when the call ended */
  const char *breaker_state; /* after the call, when the policy has a breaker */
  uint64_t bounds[MAX_BOUNDS]; /* each attempt's bound, read as it starts */
  size_t n_bounds;
  int bound_failed;
  long long winner;          /* hedged calls: the winner, or -1 */
  uint64_t launched[8];      /* hedged calls: each launch, ms since the start */
  size_t n_launched;
  uint32_t cancelled;        /* hedged calls: the attempts to cancel at the end */
} run_state;

static char why[512];

static void failf(const char *fmt, ...) {
  va_list ap;
  if (why[0]) return; /* keep the first mismatch */
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
}

static const char *kind_name(retryrs_event_kind k) {
  switch (k) {
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
    default: return "?";
  }
}

static const char *reason_name(retryrs_reason r) {
  switch (r) {
    case RETRYRS_REASON_ATTEMPTS: return "attempts";
    case RETRYRS_REASON_DEADLINE: return "deadline";
    case RETRYRS_REASON_BUDGET: return "budget";
    case RETRYRS_REASON_RETRY_AFTER: return "retry_after";
    case RETRYRS_REASON_CIRCUIT_OPEN: return "circuit_open";
    case RETRYRS_REASON_STOPPED: return "stopped";
    default: return NULL;
  }
}

static const char *outcome_name(retryrs_status s) {
  switch (s) {
    case RETRYRS_OK: return "success";
    case RETRYRS_REJECTED: return "rejected";
    case RETRYRS_EXHAUSTED: return "exhausted";
    case RETRYRS_CANCELLED: return "cancelled";
    default: return retryrs_status_name(s);
  }
}

static void on_event(void *user_data, const retryrs_event *e) {
  run_state *st = (run_state *)user_data;
  if (st->n_events < MAX_EVENTS) {
    seen_event *s = &st->events[st->n_events++];
    s->kind = e->kind;
    s->attempt = e->attempt;
    s->elapsed_ms = e->elapsed_ms;
    s->delay_ms = e->delay_ms;
    s->reason = e->reason;
    s->retries_left = e->retries_left;
  }
  if (st->blocking && e->kind == RETRYRS_EVENT_RETRYING && e->attempt >= 1 &&
      e->attempt <= st->call->n_attempts) {
    const cv_attempt *a = &st->call->attempts[e->attempt - 1];
    if (a->wait_overrun_ms) retryrs_testing_advance(a->wait_overrun_ms);
    if (a->cancel_during_wait) retryrs_cancel_fire(st->cancel);
  }
}

/* The script entry for attempt n, or NULL (and the vector fails) past its end. */
static const cv_attempt *script(run_state *st, uint32_t n) {
  st->made++;
  if (n < 1 || n > st->call->n_attempts) {
    st->overran = 1;
    return NULL;
  }
  return &st->call->attempts[n - 1];
}

/* The attempt's bound as it starts, through `status` (what retryrs_attempt_remaining_ms or
 * retryrs_call_remaining_ms returned for `ms`). */
static void saw_bound(run_state *st, retryrs_status status, uint64_t ms) {
  if (status != RETRYRS_OK) {
    st->bound_failed = 1;
    failf("reading the attempt's bound: %s", retryrs_last_error());
  }
  if (st->n_bounds < MAX_BOUNDS) st->bounds[st->n_bounds++] = ms;
}

static retryrs_verdict attempt_fn(void *user_data, uint32_t attempt, double *hint_ms) {
  run_state *st = (run_state *)user_data;
  uint64_t bound = 0;
  retryrs_status s = retryrs_attempt_remaining_ms(&bound);
  const cv_attempt *a = script(st, attempt);
  saw_bound(st, s, bound);
  if (!a) return RETRYRS_PERMANENT;
  if (a->timed_out) {
    /* The attempt's own I/O timed out at its bound: it took the bound, and says so. */
    if (s != RETRYRS_OK || bound == RETRYRS_UNBOUNDED) failf("attempt %u timed out but is unbounded", attempt);
    else retryrs_testing_advance(bound);
    return RETRYRS_TIMED_OUT;
  }
  if (a->takes_ms) retryrs_testing_advance(a->takes_ms);
  if (a->has_hint) *hint_ms = a->hint_ms;
  return a->result;
}

/* A hook vector's hooks: the script's answer for the attempt that failed. */
static const cv_attempt *hooked_step(run_state *st, uint32_t n) {
  return n >= 1 && n <= st->call->n_attempts ? &st->call->attempts[n - 1] : NULL;
}

static retryrs_plan before_retry_fn(void *user_data, const retryrs_retry_info *info) {
  const cv_attempt *a = hooked_step((run_state *)user_data, info->attempt);
  return a && a->plan == RETRYRS_PLAN_STOP ? RETRYRS_PLAN_STOP : RETRYRS_PLAN_ENGINE;
}

static double wait_fn(void *user_data, const retryrs_retry_info *info) {
  const cv_attempt *a = hooked_step((run_state *)user_data, info->attempt);
  return a && a->plan == RETRYRS_PLAN_EXACT ? a->wait_ms : -1.0;
}

/* The vector's policy through the document loader; `*doc` owns the budget the retrier
 * shares (the retrier keeps its own reference), freed by the caller. */
retryrs_status cv_make_retrier(const cv_policy *p, retryrs_policies **doc, const retryrs_budget **budget,
                               retryrs_breaker **breaker, retryrs_retrier **out) {
  retryrs_config c;
  retryrs_retrier *plain = NULL;
  retryrs_status s = retryrs_policies_from_json(p->document, strlen(p->document), doc);
  if (s != RETRYRS_OK) return s;
  if ((s = retryrs_policies_get(*doc, "retry", &c)) != RETRYRS_OK) return s;
  *budget = c.budget;
  /* Straight from the document for a gRPC service config: its pushback rule is not a
   * knob, so a retryrs_config copy would not hold it (nor a breaker: it has none); nor
   * for a hedging policy, whose hedge is not a knob either (a document's retrier keeps
   * the policy's breaker). */
  if (p->service_config || p->hedging) return retryrs_policies_retrier(*doc, "retry", out);
  /* A config carries no breaker: the document's is handed to the retrier apart. */
  if ((s = retryrs_policies_breaker(*doc, "retry", breaker)) != RETRYRS_OK) return s;
  if (!*breaker) return retryrs_retrier_new(&c, out);
  if ((s = retryrs_retrier_new(&c, &plain)) != RETRYRS_OK) return s;
  s = retryrs_retrier_with_breaker(plain, *breaker, out);
  retryrs_retrier_free(plain);
  return s;
}

static const char *breaker_state_name(int32_t s) {
  return s == RETRYRS_BREAKER_CLOSED ? "closed" : s == RETRYRS_BREAKER_OPEN ? "open" : s == RETRYRS_BREAKER_HALF_OPEN ? "half_open" : s == RETRYRS_BREAKER_ISOLATED ? "isolated" : "?";
}

/* Drives one call through the sans-IO engine on the runner's own millisecond clock. */
static void run_engine(const retryrs_retrier *r, run_state *st, retryrs_status *status, uint32_t *attempts,
                       retryrs_reason *reason) {
  retryrs_listener l = {on_event, st};
  retryrs_call *call = NULL;
  retryrs_step step = {RETRYRS_ACTION_ATTEMPT, 0, 1, RETRYRS_OK, RETRYRS_REASON_NONE};
  /* Any time base (the engine only subtracts), moved to the call's at_ms: a breaker's
   * timeline is the vector's. */
  uint64_t now = 1000 + st->call->at_ms;
  *status = RETRYRS_INTERNAL_ERROR;
  if (retryrs_call_start(r, now, &l, &call) != RETRYRS_OK) {
    failf("retryrs_call_start: %s", retryrs_last_error());
    return;
  }
  if (retryrs_call_refusal(call, NULL) == RETRYRS_EXHAUSTED) {
    /* The breaker refused the call: no attempt. */
    step.action = RETRYRS_ACTION_STOP;
    step.outcome = RETRYRS_EXHAUSTED;
    step.attempt = 0;
    step.reason = RETRYRS_REASON_CIRCUIT_OPEN;
  }
  while (step.action != RETRYRS_ACTION_STOP) {
    uint64_t bound = 0;
    retryrs_status s = retryrs_call_remaining_ms(call, now, &bound);
    const cv_attempt *a = script(st, step.attempt);
    saw_bound(st, s, bound);
    if (!a) break;
    if (a->timed_out && (s != RETRYRS_OK || bound == RETRYRS_UNBOUNDED)) {
      failf("attempt %u timed out but is unbounded", step.attempt);
      break;
    }
    /* A timed-out attempt takes its bound (and a->result is RETRYRS_TIMED_OUT). */
    now += a->timed_out ? bound : a->takes_ms;
    if (a->timed_out && !st->call->hooked) {
      s = retryrs_call_record_timeout(call, now, &step);
    } else if (st->call->hooked) {
      /* Propose, answer with the script's plan, settle. */
      retryrs_proposal p;
      s = retryrs_call_propose(call, a->result, a->has_hint ? a->hint_ms : -1.0, now, &p);
      if (s == RETRYRS_OK && p.action == RETRYRS_ACTION_PROPOSED) {
        s = retryrs_call_settle(call, a->plan, a->wait_ms, now, &step);
      } else if (s == RETRYRS_OK) {
        step.action = p.action;
        step.attempt = p.attempt;
        step.outcome = p.outcome;
        step.reason = p.reason;
      }
    } else {
      s = retryrs_call_report(call, a->result, a->has_hint ? a->hint_ms : -1.0, now, &step);
    }
    if (s == RETRYRS_OK && step.action == RETRYRS_ACTION_RETRY) {
      if (a->cancel_during_wait) {
        s = retryrs_call_cancel(call, now, &step);
      } else {
        now += step.delay_ms + a->wait_overrun_ms;
        s = retryrs_call_after_wait(call, now, &step);
      }
    }
    if (s != RETRYRS_OK) {
      failf("engine step: %s", retryrs_last_error());
      break;
    }
  }
  if (step.action == RETRYRS_ACTION_STOP) {
    *status = step.outcome;
    *attempts = step.attempt;
    *reason = step.reason;
  }
  st->ended_at = now;
  retryrs_call_free(call);
}

/* Drives one hedged call through retryrs_hedge_* on the runner's own millisecond clock:
 * attempt k ends takes_ms after its launch; at one instant, outcomes are reported (lowest
 * attempt first) before a due hedge. Then each cancelled loser's late result is
 * reported: it must be dropped, changing neither the events nor the budget. */
static void run_hedge(const retryrs_retrier *r, run_state *st, const retryrs_budget *budget, retryrs_status *status,
                      uint32_t *attempts, retryrs_reason *reason) {
  retryrs_listener l = {on_event, st};
  retryrs_hedge *h = NULL;
  retryrs_hedge_step step;
  const uint64_t base = 1000; /* any time base: the engine only subtracts */
  uint64_t now = base, ends[6] = {0};
  uint32_t launched = 0, running = 0, k;
  retryrs_status s;
  *status = RETRYRS_INTERNAL_ERROR;
  st->winner = -1;
  if (retryrs_hedge_start(r, now, &l, &h) != RETRYRS_OK) {
    failf("retryrs_hedge_start: %s", retryrs_last_error());
    return;
  }
  s = retryrs_hedge_poll(h, now, &step);
  while (s == RETRYRS_OK && (step.action == RETRYRS_HEDGE_LAUNCH || step.action == RETRYRS_HEDGE_WAIT)) {
    if (step.action == RETRYRS_HEDGE_LAUNCH) {
      uint64_t bound = 0;
      retryrs_status bs = retryrs_hedge_remaining_ms(h, step.attempt, now, &bound);
      const cv_attempt *a = script(st, step.attempt);
      saw_bound(st, bs, bound);
      if (!a || step.attempt > 5) break;
      launched = step.attempt;
      if (st->n_launched < 8) st->launched[st->n_launched++] = now - base;
      ends[step.attempt] = now + a->takes_ms;
      running |= 1u << (step.attempt - 1);
      s = retryrs_hedge_poll(h, now, &step);
      continue;
    }
    uint32_t next = 0;
    for (k = 1; k <= 5; k++)
      if ((running & (1u << (k - 1))) && (!next || ends[k] < ends[next])) next = k;
    if (next && (step.wake_ms == RETRYRS_UNBOUNDED || ends[next] <= step.wake_ms)) {
      const cv_attempt *a = &st->call->attempts[next - 1];
      now = ends[next];
      running &= ~(1u << (next - 1));
      s = retryrs_hedge_report(h, next, a->result, a->has_hint ? a->hint_ms : -1.0, now, &step);
    } else if (step.wake_ms != RETRYRS_UNBOUNDED) {
      if (step.wake_ms < now) {
        failf("told to wait until %llu, before now (%llu)", (unsigned long long)step.wake_ms, (unsigned long long)now);
        break;
      }
      now = step.wake_ms;
      s = retryrs_hedge_poll(h, now, &step);
    } else {
      failf("told to wait for an outcome with nothing in flight");
      break;
    }
  }
  if (s != RETRYRS_OK) failf("hedge step: %s", retryrs_last_error());
  *attempts = launched;
  if (s == RETRYRS_OK && (step.action == RETRYRS_HEDGE_WON || step.action == RETRYRS_HEDGE_STOP)) {
    size_t events = st->n_events;
    double before = -1, after = -1;
    *status = step.outcome;
    *reason = step.reason;
    st->cancelled = step.cancel;
    if (step.action == RETRYRS_HEDGE_WON) st->winner = step.attempt;
    if (budget) retryrs_budget_tokens(budget, &before);
    for (k = 1; k <= 5; k++) {
      retryrs_hedge_step late;
      const cv_attempt *a = &st->call->attempts[k - 1];
      if (!(step.cancel & (1u << (k - 1)))) continue;
      s = retryrs_hedge_report(h, k, a->result, a->has_hint ? a->hint_ms : -1.0, ends[k], &late);
      if (s != RETRYRS_OK || late.action != RETRYRS_HEDGE_DROPPED)
        failf("the late result of cancelled attempt %u was not dropped (status %s, action %d)", k,
              retryrs_status_name(s), late.action);
    }
    if (budget) retryrs_budget_tokens(budget, &after);
    if (st->n_events != events || before != after) failf("a late result changed the events or the budget");
  }
  retryrs_hedge_free(h);
}

static void check_call(const cv_call *c, run_state *st, retryrs_status status, uint32_t attempts,
                       retryrs_reason reason, const retryrs_budget *budget) {
  if (c->breaker_state && (!st->breaker_state || strcmp(st->breaker_state, c->breaker_state) != 0))
    failf("breaker state %s, expected %s", st->breaker_state ? st->breaker_state : "none", c->breaker_state);
  size_t i, n_delays = 0;
  if (st->overran) failf("the function was called more often than the script has entries");
  if (strcmp(outcome_name(status), c->outcome) != 0)
    failf("outcome %s, expected %s (%s)", outcome_name(status), c->outcome, retryrs_last_error());
  if (c->reason && (!reason_name(reason) || strcmp(reason_name(reason), c->reason) != 0))
    failf("reason %s, expected %s", reason_name(reason) ? reason_name(reason) : "none", c->reason);
  if (c->expect_attempts >= 0 && ((long long)st->made != c->expect_attempts || (long long)attempts != c->expect_attempts))
    failf("attempts: called %zu, reported %u, expected %lld", st->made, attempts, c->expect_attempts);
  for (i = 0; i < st->n_events; i++) {
    if (st->events[i].kind != RETRYRS_EVENT_RETRYING) continue;
    if (c->has_delays && (n_delays >= c->n_delays || (long long)st->events[i].delay_ms != c->delays[n_delays]))
      failf("delay #%zu is %llu ms, expected %lld", n_delays + 1, (unsigned long long)st->events[i].delay_ms,
            n_delays < c->n_delays ? c->delays[n_delays] : -1LL);
    n_delays++;
  }
  if (c->has_delays && n_delays != c->n_delays) failf("%zu delays, expected %zu", n_delays, c->n_delays);
  if (c->has_events) {
    if (st->n_events != c->n_events) failf("%zu events, expected %zu", st->n_events, c->n_events);
    for (i = 0; i < st->n_events && i < c->n_events; i++) {
      const seen_event *s = &st->events[i];
      const cv_event *e = &c->events[i];
      const char *r = reason_name(s->reason);
      if (strcmp(kind_name(s->kind), e->kind) != 0 || (e->attempt >= 0 && (long long)s->attempt != e->attempt) ||
          (e->elapsed_ms >= 0 && (long long)s->elapsed_ms != e->elapsed_ms) ||
          (e->delay_ms >= 0 && (long long)s->delay_ms != e->delay_ms) ||
          (e->reason && (!r || strcmp(r, e->reason) != 0)) ||
          (e->retries_left >= 0 && (long long)s->retries_left != e->retries_left))
        failf("event #%zu is %s attempt %u at %llu ms (delay %llu, reason %s), expected %s attempt %lld at %lld ms",
              i + 1, kind_name(s->kind), s->attempt, (unsigned long long)s->elapsed_ms,
              (unsigned long long)s->delay_ms, r ? r : "none", e->kind, e->attempt, e->elapsed_ms);
    }
  }
  if (c->has_bounds) {
    if (st->n_bounds != c->n_bounds) failf("%zu attempt bounds read, expected %zu", st->n_bounds, c->n_bounds);
    for (i = 0; i < st->n_bounds && i < c->n_bounds; i++)
      if (st->bounds[i] != c->bounds[i])
        failf("attempt %zu's bound is %llu ms, expected %llu (UINT64_MAX: unbounded)", i + 1,
              (unsigned long long)st->bounds[i], (unsigned long long)c->bounds[i]);
  }
  if (c->winner != st->winner && (c->winner >= 0 || st->winner >= 0))
    failf("winner %lld, expected %lld", st->winner, c->winner);
  if (c->has_launched) {
    if (st->n_launched != c->n_launched) failf("%zu attempts launched, expected %zu", st->n_launched, c->n_launched);
    for (i = 0; i < st->n_launched && i < c->n_launched; i++)
      if ((long long)st->launched[i] != c->launched[i])
        failf("attempt %zu launched at %llu ms, expected %lld", i + 1, (unsigned long long)st->launched[i],
              c->launched[i]);
  }
  if (c->has_cancelled && st->cancelled != c->cancelled)
    failf("cancelled mask %#x, expected %#x", st->cancelled, c->cancelled);
  if (c->has_budget_tokens) {
    double tokens = -1;
    if (!budget || retryrs_budget_tokens(budget, &tokens) != RETRYRS_OK || fabs(tokens - c->budget_tokens) > 1e-9)
      failf("budget has %.12g tokens, expected %.12g", tokens, c->budget_tokens);
  }
}

static void run_calls(const cv_vector *v, int blocking) {
  retryrs_policies *doc = NULL;
  const retryrs_budget *budget = NULL;
  retryrs_breaker *breaker = NULL;
  retryrs_retrier *r = NULL;
  static run_state st; /* large: kept off the stack */
  size_t i;
  if (cv_make_retrier(&v->policy, &doc, &budget, &breaker, &r) != RETRYRS_OK) {
    failf("building the retrier: %s", retryrs_last_error());
    retryrs_breaker_free(breaker);
    retryrs_policies_free(doc);
    return;
  }
  for (i = 0; i < v->n_calls && !why[0]; i++) {
    retryrs_status status = RETRYRS_INTERNAL_ERROR;
    uint32_t attempts = 0;
    retryrs_reason reason = RETRYRS_REASON_NONE;
    memset(&st, 0, sizeof st);
    st.call = &v->calls[i];
    st.blocking = blocking;
    st.winner = -1;
    if (v->policy.hedging) {
      /* A blocking call cannot abandon an attempt: hedged calls run through the sans-IO
       * engine only (both passes run it, so it runs twice: the calls share the budget
       * only within one pass, as each pass builds its own retrier). */
      run_hedge(r, &st, budget, &status, &attempts, &reason);
    } else if (blocking) {
      retryrs_listener l = {on_event, &st};
      retryrs_outcome out = {0, 0};
      retryrs_cancel_new(&st.cancel);
      retryrs_testing_enable(); /* a fresh virtual clock at 0 for each call */
      if (st.call->at_ms) retryrs_testing_advance(st.call->at_ms); /* the vector's timeline */
      if (st.call->hooked) {
        retryrs_hooks hooks = {sizeof hooks, wait_fn, before_retry_fn, &st};
        status = retryrs_retrier_call_hooked(r, attempt_fn, &st, &l, st.cancel, &hooks, &out);
      } else {
        status = retryrs_retrier_call(r, attempt_fn, &st, &l, st.cancel, &out);
      }
      if (breaker) {
        int32_t state = -1;
        retryrs_breaker_state(breaker, &state, NULL);
        st.breaker_state = breaker_state_name(state);
      }
      retryrs_testing_disable();
      retryrs_cancel_free(st.cancel);
      attempts = out.attempts;
      reason = out.reason;
    } else {
      run_engine(r, &st, &status, &attempts, &reason);
      if (breaker) {
        int32_t state = -1;
        retryrs_breaker_state_at(breaker, st.ended_at, &state, NULL);
        st.breaker_state = breaker_state_name(state);
      }
    }
    check_call(st.call, &st, status, attempts, reason, budget);
    if (why[0]) {
      char prefix[600];
      snprintf(prefix, sizeof prefix, "call %zu via %s: %s", i + 1,
               v->policy.hedging ? "retryrs_hedge_*" : blocking ? (st.call->hooked ? "retryrs_retrier_call_hooked" : "retryrs_retrier_call") : "the engine", why);
      memcpy(why, prefix, sizeof why - 1);
      why[sizeof why - 1] = 0;
    }
  }
  retryrs_retrier_free(r);
  retryrs_breaker_free(breaker);
  retryrs_policies_free(doc);
}

static void run_error(const cv_vector *v) {
  retryrs_policies *doc = NULL;
  const retryrs_budget *budget = NULL;
  retryrs_breaker *breaker = NULL;
  retryrs_retrier *r = NULL;
  retryrs_status s = cv_make_retrier(&v->policy, &doc, &budget, &breaker, &r);
  const char *msg = retryrs_last_error();
  char where[200];
  snprintf(where, sizeof where, "policies.retry.%s", v->knob);
  if (s != RETRYRS_INVALID_ARGUMENT)
    failf("loading the policy returned %s, expected invalid_argument", retryrs_status_name(s));
  /* "retryrs_policies_from_json: policies.retry.max_attempts must be ...": the C function,
   * then the knob's place in the document (the loader is the core's, as in every host). */
  else if (strncmp(msg, "retryrs_", 8) != 0 || strstr(msg, where) == NULL)
    failf("message \"%s\" does not name the C function and then %s", msg, where);
  retryrs_retrier_free(r);
  retryrs_breaker_free(breaker);
  retryrs_policies_free(doc);
}

static void run_retry_after(const cv_vector *v) {
  bool has = false;
  uint64_t ms = 0;
  retryrs_status s = retryrs_parse_retry_after_at(v->ra_value, v->ra_now_unix_s * 1000, &has, &ms);
  if (s != RETRYRS_OK) failf("retryrs_parse_retry_after_at: %s", retryrs_last_error());
  else if (v->ra_expect == CV_RA_NONE && has) failf("got %llu ms, expected no hint", (unsigned long long)ms);
  else if (v->ra_expect != CV_RA_NONE && !has) failf("got no hint");
  else if (v->ra_expect == CV_RA_MS && ms != v->ra_expect_ms)
    failf("got %llu ms, expected %llu", (unsigned long long)ms, v->ra_expect_ms);
  else if (v->ra_expect == CV_RA_SATURATED && ms < 1000000000000000ULL)
    failf("got %llu ms, expected a saturated value", (unsigned long long)ms);
}

static void run_http(const cv_vector *v) {
  retryrs_verdict verdict = -1;
  retryrs_status st = retryrs_http_classify_request(
      v->http_method, v->http_idempotency_key, v->http_outcome, v->http_status,
      v->has_http_methods ? v->http_methods : NULL, v->n_http_methods,
      v->has_http_statuses ? v->http_statuses : NULL, v->n_http_statuses, &verdict);
  if (st != RETRYRS_OK) {
    failf("retryrs_http_classify_request: %s", retryrs_last_error());
    return;
  }
  const char *got = verdict == RETRYRS_TRANSIENT ? "retry"
                    : verdict == RETRYRS_SUCCESS ? "response"
                    : verdict == RETRYRS_PERMANENT ? "fail" : "?";
  if (strcmp(got, v->http_expect) != 0) failf("classified %s, expected %s", got, v->http_expect);
}

int run_conformance(const char *report_path) {
  size_t i;
  int passed = 0, failed = 0;
  for (i = 0; i < cv_vector_count; i++) {
    const cv_vector *v = &cv_vectors[i];
    char name[300];
    why[0] = 0;
    switch (v->kind) {
      case CV_CALLS:
        run_calls(v, 1);
        run_calls(v, 0);
        break;
      case CV_ERROR: run_error(v); break;
      case CV_RETRY_AFTER: run_retry_after(v); break;
      case CV_STATUS:
        if (retryrs_is_retryable_status(v->status_code) != (v->status_retryable != 0))
          failf("retryable is %d, expected %d", !v->status_retryable, v->status_retryable);
        break;
      case CV_HTTP: run_http(v); break;
      case CV_PROPAGATION: {
        const char *wrong = cv_run_propagation(v->prop, &v->policy);
        if (wrong) failf("%s", wrong);
        break;
      }
      default: failf("unknown vector kind %d", v->kind);
    }
    snprintf(name, sizeof name, "conformance %s (%s)", v->id, v->file);
    if (why[0]) fprintf(stderr, "  %s: %s\n", v->id, why);
    h_record(name, !why[0]);
    if (why[0]) failed++; else passed++;
  }
  for (i = 0; i < cv_skipped_count; i++) printf("  skipped %s: %s\n", cv_skipped[i], cv_skip_reason);
  printf("conformance: %d passed, %d failed, %d skipped\n", passed, failed, (int)cv_skipped_count);
  if (report_path) {
    FILE *f = fopen(report_path, "w");
    if (f) {
      fprintf(f, "c %d %d %d\n", passed, failed, (int)cv_skipped_count);
      fclose(f);
    } else {
      fprintf(stderr, "cannot write %s\n", report_path);
      failed++;
    }
  }
  return failed;
}
