/* Threads: a cancel fired from a second thread wakes a 30 s wait at once; one retrier
 * and one budget shared by several threads. Real time (the testing switch is off). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "retryrs.h"
#include "retryrs_testing.h"
#include "suites.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static retryrs_verdict always_transient(void *user_data, uint32_t attempt, double *hint_ms) {
  (void)hint_ms;
  *(uint32_t *)user_data = attempt;
  return RETRYRS_TRANSIENT;
}

static void *fire_later(void *token) {
  sleep_ms(50);
  CHECK_STATUS(retryrs_cancel_fire((const retryrs_cancel *)token), RETRYRS_OK);
  return NULL;
}

static void on_event(void *user_data, const retryrs_event *e) {
  if (e->kind == RETRYRS_EVENT_CANCELLED) *(int *)user_data += 1;
}

static void test_cancel_from_another_thread_wakes_a_long_wait(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_cancel *k = NULL;
  retryrs_outcome out;
  pthread_t t;
  uint32_t attempts = 0;
  int cancelled_events = 0;
  retryrs_listener l = {on_event, &cancelled_events};
  double started, took;
  CHECK(!retryrs_testing_is_on());
  retryrs_config_default(&c);
  c.initial_delay_ms = 30000;
  c.max_delay_ms = 30000;
  c.jitter = RETRYRS_JITTER_NONE;
  c.has_deadline = false;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_new(&k), RETRYRS_OK);
  CHECK(pthread_create(&t, NULL, fire_later, k) == 0);
  started = now_s();
  CHECK_STATUS(retryrs_retrier_call(r, always_transient, &attempts, &l, k, &out), RETRYRS_CANCELLED);
  took = now_s() - started;
  pthread_join(t, NULL);
  CHECK(out.attempts == 1 && attempts == 1);
  CHECK(cancelled_events == 1);
  /* 50 ms until the cancel, then "at once": 2 s of slack for a loaded machine (or
   * valgrind), still far below the 30 s the timer would take. */
  if (took >= 2.0) fprintf(stderr, "    the cancelled call took %.3f s\n", took);
  CHECK(took < 2.0);
  retryrs_cancel_free(k);
  retryrs_retrier_free(r);
}

typedef struct {
  const retryrs_retrier *r;
  int ok;
} worker_arg;

static retryrs_verdict fail_once(void *user_data, uint32_t attempt, double *hint_ms) {
  (void)user_data;
  (void)hint_ms;
  return attempt == 1 ? RETRYRS_TRANSIENT : RETRYRS_SUCCESS;
}

static void *worker(void *p) {
  worker_arg *a = (worker_arg *)p;
  int i;
  for (i = 0; i < 50; i++) {
    retryrs_outcome out;
    if (retryrs_retrier_call(a->r, fail_once, NULL, NULL, NULL, &out) == RETRYRS_OK && out.attempts == 2) a->ok++;
  }
  return NULL;
}

static void test_one_retrier_and_budget_shared_by_threads(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_budget *b = NULL;
  pthread_t t[4];
  worker_arg args[4];
  double tokens = 0;
  int i;
  CHECK_STATUS(retryrs_budget_new(1000, 1, &b), RETRYRS_OK);
  retryrs_config_default(&c);
  c.initial_delay_ms = 0;
  c.max_delay_ms = 0;
  c.budget = b;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  for (i = 0; i < 4; i++) {
    args[i].r = r;
    args[i].ok = 0;
    CHECK(pthread_create(&t[i], NULL, worker, &args[i]) == 0);
  }
  /* read the balance while the workers spend and refill it (one atomic, no lock) */
  for (i = 0; i < 20; i++) {
    CHECK_STATUS(retryrs_budget_tokens(b, &tokens), RETRYRS_OK);
    CHECK(tokens >= 995.0 && tokens <= 1000.0);
  }
  for (i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK(args[i].ok == 50);
  }
  /* every call cost one token and gave one back: none lost to races */
  CHECK_STATUS(retryrs_budget_tokens(b, &tokens), RETRYRS_OK);
  CHECK(tokens == 1000.0);
  retryrs_retrier_free(r);
  retryrs_budget_free(b);
}

static void *fail_in_thread(void *p) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  (void)p;
  retryrs_config_default(&c);
  c.multiplier = 0.25;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "multiplier") != NULL);
  return NULL;
}

static void test_the_last_error_is_per_thread(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  pthread_t t;
  retryrs_config_default(&c);
  c.max_attempts = 0;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_INVALID_ARGUMENT);
  CHECK(pthread_create(&t, NULL, fail_in_thread, NULL) == 0);
  pthread_join(t, NULL);
  /* the other thread's failure did not overwrite this thread's message */
  CHECK(strstr(retryrs_last_error(), "max_attempts must be >= 1") != NULL);
}

/* Unseeded jittered calls on several threads at once: each draws its seeds from the one
 * process-wide sequence (atomics). Then every thread waits 30 s on one shared retrier
 * and one token; the main thread fires the token and at once frees the retrier, so the
 * last reference to it is dropped on whichever thread gets there last. The only
 * synchronisation between those threads is the library's own (the token's flag and
 * condvar, the retrier's reference count): what the thread checkers must not mistake for
 * races (bindings-c/valgrind/retryrs.supp). */
typedef struct {
  const retryrs_retrier *jittered, *slow;
  const retryrs_cancel *k;
  pthread_mutex_t *lock;
  pthread_cond_t *cond;
  int *started;
  int exhausted, cancelled;
} jitter_arg;

static retryrs_verdict announce_then_fail(void *user_data, uint32_t attempt, double *hint_ms) {
  jitter_arg *a = (jitter_arg *)user_data;
  (void)hint_ms;
  if (attempt == 1) {
    pthread_mutex_lock(a->lock);
    ++*a->started;
    pthread_cond_signal(a->cond);
    pthread_mutex_unlock(a->lock);
  }
  return RETRYRS_TRANSIENT;
}

static void *jittered_calls(void *p) {
  jitter_arg *a = (jitter_arg *)p;
  retryrs_outcome out;
  uint32_t attempts = 0;
  int i;
  for (i = 0; i < 20; i++) {
    if (retryrs_retrier_call(a->jittered, always_transient, &attempts, NULL, NULL, &out) == RETRYRS_EXHAUSTED) a->exhausted++;
  }
  if (retryrs_retrier_call(a->slow, announce_then_fail, a, NULL, a->k, &out) == RETRYRS_CANCELLED) a->cancelled++;
  return NULL;
}

static void test_unseeded_calls_on_threads_then_one_token_and_a_free(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL, *slow = NULL;
  retryrs_cancel *k = NULL;
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  int started = 0;
  pthread_t t[4];
  jitter_arg args[4];
  int i;
  retryrs_config_default(&c);
  c.max_attempts = 3;
  c.initial_delay_ms = 1;
  c.max_delay_ms = 1;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  c.initial_delay_ms = 30000;
  c.max_delay_ms = 30000;
  c.has_deadline = false;
  CHECK_STATUS(retryrs_retrier_new(&c, &slow), RETRYRS_OK);
  CHECK_STATUS(retryrs_cancel_new(&k), RETRYRS_OK);
  for (i = 0; i < 4; i++) {
    args[i].jittered = r;
    args[i].slow = slow;
    args[i].k = k;
    args[i].lock = &lock;
    args[i].cond = &cond;
    args[i].started = &started;
    args[i].exhausted = args[i].cancelled = 0;
    CHECK(pthread_create(&t[i], NULL, jittered_calls, &args[i]) == 0);
  }
  /* every call on `slow` has begun (and holds its own reference) before it is freed */
  pthread_mutex_lock(&lock);
  while (started < 4) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  CHECK_STATUS(retryrs_cancel_fire(k), RETRYRS_OK);
  retryrs_retrier_free(slow);
  for (i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK(args[i].exhausted == 20 && args[i].cancelled == 1);
  }
  retryrs_cancel_free(k);
  retryrs_retrier_free(r);
}

void thread_tests(void) {
  /* First: in tests/c/threads_main.c (the thread checkers' run) its threads are the first
   * to read the monotonic clock, so they also race to initialise its origin (a OnceLock). */
  h_run("unseeded calls on threads, then one token and a free for all", test_unseeded_calls_on_threads_then_one_token_and_a_free);
  h_run("the last error is per thread", test_the_last_error_is_per_thread);
  h_run("a cancel from another thread wakes a 30 s wait at once", test_cancel_from_another_thread_wakes_a_long_wait);
  h_run("one retrier and budget shared by threads", test_one_retrier_and_budget_shared_by_threads);
}
