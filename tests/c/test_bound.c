/* The attempt's bound in C (contract section 3a): retryrs_attempt_remaining_ms() inside a
 * blocking call's attempt callback, retryrs_call_remaining_ms() for the sans-IO engine,
 * and where each is refused. Blocking calls run under virtual time: the callbacks advance
 * the clock to stand for the time an attempt takes. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "retryrs.h"
#include "retryrs_testing.h"
#include "suites.h"

/* No jitter, the given deadline and attempt timeout (< 0: off), 100 ms first wait. */
static retryrs_retrier *bounded(uint64_t attempts, double deadline_ms, double attempt_timeout_ms) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_config_default(&c);
  c.max_attempts = attempts;
  c.initial_delay_ms = 100;
  c.jitter = RETRYRS_JITTER_NONE;
  c.has_deadline = deadline_ms >= 0;
  c.deadline_ms = deadline_ms >= 0 ? deadline_ms : 0;
  c.has_attempt_timeout = attempt_timeout_ms >= 0;
  c.attempt_timeout_ms = attempt_timeout_ms >= 0 ? attempt_timeout_ms : 0;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  return r;
}

#define MAX_SEEN 16

typedef struct {
  uint64_t takes_ms;          /* virtual time each attempt takes */
  uint32_t succeed_at;        /* the attempt that succeeds (0: none) */
  uint64_t at_start[MAX_SEEN]; /* the bound read when each attempt starts */
  uint64_t at_end[MAX_SEEN];   /* and again after it took its time */
  retryrs_status status[MAX_SEEN];
  uint32_t calls;
  retryrs_status in_listener;
  retryrs_status on_thread;
} probe;

static retryrs_verdict probing(void *user_data, uint32_t attempt, double *hint_ms) {
  probe *p = (probe *)user_data;
  (void)hint_ms;
  if (p->calls < MAX_SEEN) {
    p->status[p->calls] = retryrs_attempt_remaining_ms(&p->at_start[p->calls]);
    retryrs_testing_advance(p->takes_ms);
    retryrs_attempt_remaining_ms(&p->at_end[p->calls]);
  }
  p->calls++;
  return p->succeed_at == attempt ? RETRYRS_SUCCESS : RETRYRS_TRANSIENT;
}

static void test_the_callback_reads_its_bound_counting_down(void) {
  /* Deadline 1000 ms, attempt timeout 300 ms, each attempt 250 ms, waits 100 and 200:
   * attempts start at 0, 350 and 800: bounds 300, 300, then the 200 left. */
  retryrs_retrier *r = bounded(5, 1000, 300);
  probe p = {.takes_ms = 250, .succeed_at = 3};
  retryrs_outcome out = {0, 0};
  retryrs_testing_enable();
  CHECK_STATUS(retryrs_retrier_call(r, probing, &p, NULL, NULL, &out), RETRYRS_OK);
  retryrs_testing_disable();
  CHECK(p.calls == 3 && out.attempts == 3);
  CHECK(p.status[0] == RETRYRS_OK && p.status[1] == RETRYRS_OK && p.status[2] == RETRYRS_OK);
  CHECK(p.at_start[0] == 300 && p.at_start[1] == 300 && p.at_start[2] == 200);
  /* Read again after the attempt's 250 ms: its bound counts down, to 0 once passed. */
  CHECK(p.at_end[0] == 50 && p.at_end[1] == 50 && p.at_end[2] == 0);
  retryrs_retrier_free(r);
}

static void test_an_unbounded_attempt_reads_uint64_max(void) {
  retryrs_retrier *r = bounded(2, -1, -1);
  probe p = {.takes_ms = 10, .succeed_at = 2};
  CHECK(RETRYRS_UNBOUNDED == UINT64_MAX);
  retryrs_testing_enable();
  CHECK_STATUS(retryrs_retrier_call(r, probing, &p, NULL, NULL, NULL), RETRYRS_OK);
  retryrs_testing_disable();
  CHECK(p.calls == 2 && p.at_start[0] == UINT64_MAX && p.at_start[1] == UINT64_MAX && p.at_end[1] == UINT64_MAX);
  retryrs_retrier_free(r);
}

static void test_a_context_entered_inside_another_narrows_it(void) {
  /* A library's own context (30 s, no retry mark) entered inside a request's (300 ms, a
   * retry): the call obeys the request's deadline (less the 6 ms margin of 300 ms) and
   * its retry mark (one attempt); leaving restores each in turn. */
  retryrs_retrier *r = bounded(5, -1, -1);
  retryrs_context *request = NULL, *own = NULL;
  probe p = {.takes_ms = 10, .succeed_at = 0};
  retryrs_outcome out = {0, 0};
  retryrs_testing_enable();
  CHECK_STATUS(retryrs_context_new(300, true, &request), RETRYRS_OK);
  CHECK_STATUS(retryrs_context_new(30000, false, &own), RETRYRS_OK);
  CHECK_STATUS(retryrs_context_enter(request), RETRYRS_OK);
  CHECK_STATUS(retryrs_context_enter(own), RETRYRS_OK);
  CHECK(retryrs_context_current_is_retry());
  retryrs_retrier_call(r, probing, &p, NULL, NULL, &out);
  CHECK(p.calls == 1 && out.attempts == 1);
  CHECK(p.at_start[0] == 294);
  CHECK_STATUS(retryrs_context_leave(), RETRYRS_OK);
  CHECK(retryrs_context_current_is_retry());
  CHECK_STATUS(retryrs_context_leave(), RETRYRS_OK);
  CHECK(!retryrs_context_current_is_retry());
  /* Alone, the same context is its own: the 29,990 ms it has left after the first call's
   * 10 ms, less the 250 ms margin; no retry mark. */
  CHECK_STATUS(retryrs_context_enter(own), RETRYRS_OK);
  CHECK(!retryrs_context_current_is_retry());
  p = (probe){.takes_ms = 10, .succeed_at = 1};
  CHECK_STATUS(retryrs_retrier_call(r, probing, &p, NULL, NULL, NULL), RETRYRS_OK);
  CHECK(p.calls == 1 && p.at_start[0] == 29740);
  CHECK_STATUS(retryrs_context_leave(), RETRYRS_OK);
  retryrs_testing_disable();
  retryrs_context_free(own);
  retryrs_context_free(request);
  retryrs_retrier_free(r);
}

static void test_an_attempt_past_the_deadline_ends_the_call_and_a_late_success_counts(void) {
  retryrs_retrier *r = bounded(5, 500, -1);
  probe p = {.takes_ms = 700, .succeed_at = 0};
  retryrs_outcome out = {0, 0};
  retryrs_testing_enable();
  CHECK_STATUS(retryrs_retrier_call(r, probing, &p, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK(out.attempts == 1 && out.reason == RETRYRS_REASON_DEADLINE && p.at_start[0] == 500);
  retryrs_testing_disable();
  probe late = {.takes_ms = 700, .succeed_at = 1};
  retryrs_testing_enable();
  CHECK_STATUS(retryrs_retrier_call(r, probing, &late, NULL, NULL, &out), RETRYRS_OK);
  retryrs_testing_disable();
  CHECK(late.calls == 1 && late.at_end[0] == 0);
  retryrs_retrier_free(r);
}

static void asks_in_listener(void *user_data, const retryrs_event *e) {
  probe *p = (probe *)user_data;
  uint64_t ms = 0;
  (void)e;
  p->in_listener = retryrs_attempt_remaining_ms(&ms);
}

static void *ask_from_another_thread(void *arg) {
  uint64_t ms = 0;
  *(retryrs_status *)arg = retryrs_attempt_remaining_ms(&ms);
  return NULL;
}

static retryrs_verdict asks_on_a_thread(void *user_data, uint32_t attempt, double *hint_ms) {
  probe *p = (probe *)user_data;
  pthread_t t;
  (void)attempt;
  (void)hint_ms;
  p->on_thread = RETRYRS_INTERNAL_ERROR;
  if (pthread_create(&t, NULL, ask_from_another_thread, &p->on_thread) == 0) pthread_join(t, NULL);
  p->calls++;
  return RETRYRS_TRANSIENT;
}

static void test_it_is_refused_in_a_listener_and_on_another_thread(void) {
  retryrs_retrier *r = bounded(2, 1000, -1);
  probe p = {.in_listener = RETRYRS_OK};
  retryrs_listener l = {asks_in_listener, &p};
  retryrs_testing_enable();
  CHECK_STATUS(retryrs_retrier_call(r, asks_on_a_thread, &p, &l, NULL, NULL), RETRYRS_EXHAUSTED);
  retryrs_testing_disable();
  CHECK(p.calls == 2);
  CHECK(p.in_listener == RETRYRS_INVALID_ARGUMENT);
  CHECK(p.on_thread == RETRYRS_INVALID_ARGUMENT);
  /* And after the call, on this thread. */
  uint64_t ms = 42;
  CHECK_STATUS(retryrs_attempt_remaining_ms(&ms), RETRYRS_INVALID_ARGUMENT);
  CHECK(ms == 42);
  retryrs_retrier_free(r);
}

typedef struct {
  retryrs_retrier *inner;
  uint64_t outer_before, inner_seen, outer_after;
} nesting;

static retryrs_verdict inner_attempt(void *user_data, uint32_t attempt, double *hint_ms) {
  nesting *n = (nesting *)user_data;
  (void)attempt;
  (void)hint_ms;
  retryrs_attempt_remaining_ms(&n->inner_seen);
  return RETRYRS_SUCCESS;
}

static retryrs_verdict outer_attempt(void *user_data, uint32_t attempt, double *hint_ms) {
  nesting *n = (nesting *)user_data;
  (void)attempt;
  (void)hint_ms;
  retryrs_attempt_remaining_ms(&n->outer_before);
  retryrs_retrier_call(n->inner, inner_attempt, n, NULL, NULL, NULL);
  retryrs_attempt_remaining_ms(&n->outer_after);
  return RETRYRS_SUCCESS;
}

static void test_a_nested_blocking_call_has_its_own_bound_and_restores_the_outer(void) {
  retryrs_retrier *outer = bounded(1, 2000, -1);
  nesting n = {bounded(1, -1, 700), 0, 0, 0};
  retryrs_testing_enable();
  CHECK_STATUS(retryrs_retrier_call(outer, outer_attempt, &n, NULL, NULL, NULL), RETRYRS_OK);
  retryrs_testing_disable();
  CHECK(n.outer_before == 2000 && n.inner_seen == 700 && n.outer_after == 2000);
  retryrs_retrier_free(n.inner);
  retryrs_retrier_free(outer);
}

static void asks_the_call(void *user_data, const retryrs_event *e) {
  retryrs_call **call = (retryrs_call **)user_data;
  uint64_t ms = 0;
  (void)e;
  /* From inside the call's own listener: re-entrant, refused. */
  CHECK_STATUS(retryrs_call_remaining_ms(*call, 0, &ms), RETRYRS_INVALID_ARGUMENT);
}

static void test_the_sans_io_call_answers_while_an_attempt_runs(void) {
  /* Deadline 2000 ms from 5000 (so 7000), attempt timeout 400 ms. */
  retryrs_retrier *r = bounded(3, 2000, 400);
  retryrs_call *call = NULL;
  retryrs_listener l = {asks_the_call, &call};
  retryrs_step step;
  uint64_t ms = 0;
  CHECK_STATUS(retryrs_call_start(r, 5000, &l, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_remaining_ms(call, 5000, &ms), RETRYRS_OK);
  CHECK(ms == 400);
  CHECK_STATUS(retryrs_call_remaining_ms(call, 5150, &ms), RETRYRS_OK);
  CHECK(ms == 250);
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_TRANSIENT, -1, 5400, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_RETRY && step.delay_ms == 100);
  /* Waiting: no attempt in progress. */
  ms = 9;
  CHECK_STATUS(retryrs_call_remaining_ms(call, 5450, &ms), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "retryrs_call_remaining_ms") != NULL && ms == 9);
  CHECK_STATUS(retryrs_call_after_wait(call, 5500, &step), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_remaining_ms(call, 5500, &ms), RETRYRS_OK);
  CHECK(ms == 400);
  /* Attempt 2 overran its timeout (reported at 6500): a failure like any. */
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_TRANSIENT, -1, 6500, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_RETRY && step.delay_ms == 200);
  CHECK_STATUS(retryrs_call_after_wait(call, 6700, &step), RETRYRS_OK);
  /* 300 ms left before the deadline: smaller than the timeout. */
  CHECK_STATUS(retryrs_call_remaining_ms(call, 6700, &ms), RETRYRS_OK);
  CHECK(ms == 300);
  CHECK_STATUS(retryrs_call_remaining_ms(call, 7200, &ms), RETRYRS_OK);
  CHECK(ms == 0);
  /* It overran the deadline: exhausted with reason deadline, on the last attempt too. */
  CHECK_STATUS(retryrs_call_report(call, RETRYRS_TRANSIENT, -1, 7200, &step), RETRYRS_OK);
  CHECK(step.action == RETRYRS_ACTION_STOP && step.outcome == RETRYRS_EXHAUSTED);
  CHECK(step.reason == RETRYRS_REASON_DEADLINE && step.attempt == 3);
  /* The call has ended. */
  CHECK_STATUS(retryrs_call_remaining_ms(call, 7201, &ms), RETRYRS_INVALID_ARGUMENT);
  retryrs_call_free(call);
  retryrs_retrier_free(r);

  /* Unbounded. */
  r = bounded(3, -1, -1);
  CHECK_STATUS(retryrs_call_start(r, 0, NULL, &call), RETRYRS_OK);
  CHECK_STATUS(retryrs_call_remaining_ms(call, 123456, &ms), RETRYRS_OK);
  CHECK(ms == RETRYRS_UNBOUNDED);
  retryrs_call_free(call);
  retryrs_retrier_free(r);
}

/* One attempt of the sans-IO loop below: a request to a server that never answers, its
 * receive timeout the attempt's bound. Returns when the bound has passed. */
static void ask_silent_server(const struct sockaddr_in *addr, uint64_t bound_ms) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct timeval tv;
  char buf[64];
  if (fd < 0) return;
  if (bound_ms == 0) bound_ms = 1; /* 0 would mean "no timeout" */
  tv.tv_sec = (time_t)(bound_ms / 1000);
  tv.tv_usec = (suseconds_t)((bound_ms % 1000) * 1000);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, (const struct sockaddr *)addr, sizeof *addr) == 0) {
    (void)!write(fd, "GET / HTTP/1.0\r\n\r\n", 18);
    (void)!read(fd, buf, sizeof buf); /* the kernel queued the connection; nobody answers */
  }
  close(fd);
}

static void sleep_ms(uint64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void test_a_sans_io_loop_against_a_silent_server_ends_at_the_deadline(void) {
  /* A listener that never accepts: connections complete in the kernel, requests are
   * never answered. Real time: the deadline (600 ms) must end the call, within the
   * contract's 250 ms. */
  struct sockaddr_in addr;
  socklen_t len = sizeof addr;
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  retryrs_retrier *r = bounded(1000, 600, -1);
  retryrs_call *call = NULL;
  retryrs_step step = {RETRYRS_ACTION_ATTEMPT, 0, 1, RETRYRS_OK, RETRYRS_REASON_NONE};
  uint64_t started, ended, left = 0;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(listener >= 0 && bind(listener, (struct sockaddr *)&addr, sizeof addr) == 0 && listen(listener, 64) == 0);
  CHECK(getsockname(listener, (struct sockaddr *)&addr, &len) == 0);
  started = retryrs_now_ms();
  CHECK_STATUS(retryrs_call_start(r, started, NULL, &call), RETRYRS_OK);
  while (step.action != RETRYRS_ACTION_STOP) {
    if (retryrs_call_remaining_ms(call, retryrs_now_ms(), &left) != RETRYRS_OK) break;
    CHECK(left <= 600);
    ask_silent_server(&addr, left);
    if (retryrs_call_report(call, RETRYRS_TRANSIENT, -1, retryrs_now_ms(), &step) != RETRYRS_OK) break;
    if (step.action == RETRYRS_ACTION_RETRY) {
      sleep_ms(step.delay_ms);
      if (retryrs_call_after_wait(call, retryrs_now_ms(), &step) != RETRYRS_OK) break;
    }
  }
  ended = retryrs_now_ms();
  CHECK(step.action == RETRYRS_ACTION_STOP && step.outcome == RETRYRS_EXHAUSTED);
  CHECK(step.reason == RETRYRS_REASON_DEADLINE);
  if (ended - started > 600 + 250) {
    CHECK(!"the call ended within deadline + 250 ms");
    fprintf(stderr, "    it took %llu ms\n", (unsigned long long)(ended - started));
  }
  retryrs_call_free(call);
  retryrs_retrier_free(r);
  close(listener);
}

void bound_tests(void) {
  h_run("bound: the callback reads its bound, counting down", test_the_callback_reads_its_bound_counting_down);
  h_run("bound: an unbounded attempt reads UINT64_MAX", test_an_unbounded_attempt_reads_uint64_max);
  h_run("bound: past the deadline ends the call; a late success counts",
        test_an_attempt_past_the_deadline_ends_the_call_and_a_late_success_counts);
  h_run("bound: refused in a listener and on another thread", test_it_is_refused_in_a_listener_and_on_another_thread);
  h_run("bound: a nested blocking call has its own bound",
        test_a_nested_blocking_call_has_its_own_bound_and_restores_the_outer);
  h_run("bound: a context entered inside another narrows it", test_a_context_entered_inside_another_narrows_it);
  h_run("bound: the sans-IO call answers while an attempt runs", test_the_sans_io_call_answers_while_an_attempt_runs);
  h_run("bound: a sans-IO loop against a silent server ends at the deadline",
        test_a_sans_io_loop_against_a_silent_server_ends_at_the_deadline);
}
