/* Virtual time belongs to the thread that turned it on: a thread with the switch on does
 * not make another thread's 100 ms wait virtual, and a thread that exits takes its switch
 * with it. The process-wide switch is asked for by name. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
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

static retryrs_verdict always_transient(void *user_data, uint32_t attempt, double *hint_ms) {
  (void)user_data;
  (void)attempt;
  (void)hint_ms;
  return RETRYRS_TRANSIENT;
}

/* Two attempts with one 100 ms wait between them; returns the seconds it took. */
static double one_100ms_wait(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_outcome out;
  double started;
  retryrs_config_default(&c);
  c.max_attempts = 2;
  c.initial_delay_ms = 100;
  c.max_delay_ms = 100;
  c.jitter = RETRYRS_JITTER_NONE;
  c.has_deadline = false;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  started = now_s();
  CHECK_STATUS(retryrs_retrier_call(r, always_transient, NULL, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK(out.attempts == 2);
  retryrs_retrier_free(r);
  return now_s() - started;
}

typedef struct {
  pthread_barrier_t on;   /* the virtual thread has turned its switch on */
  pthread_barrier_t done; /* the real thread has waited */
  uint64_t virtual_ms;    /* the virtual thread's clock after its own wait */
  int exit_with_switch_on;
} pair;

static void *virtual_thread(void *p) {
  pair *s = p;
  CHECK_STATUS(retryrs_testing_enable(), RETRYRS_OK);
  CHECK(retryrs_testing_is_on());
  (void)one_100ms_wait();
  s->virtual_ms = retryrs_now_ms();
  pthread_barrier_wait(&s->on);
  pthread_barrier_wait(&s->done);
  if (!s->exit_with_switch_on) CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
  return NULL;
}

static void test_another_threads_switch_leaves_this_threads_waits_real(void) {
  pair s;
  pthread_t t;
  double took;
  s.exit_with_switch_on = 1;
  pthread_barrier_init(&s.on, NULL, 2);
  pthread_barrier_init(&s.done, NULL, 2);
  CHECK(pthread_create(&t, NULL, virtual_thread, &s) == 0);
  pthread_barrier_wait(&s.on);
  CHECK(s.virtual_ms == 100); /* the other thread's wait was virtual */
  CHECK(!retryrs_testing_is_on());
  CHECK_STATUS(retryrs_testing_advance(1), RETRYRS_INVALID_ARGUMENT);
  took = one_100ms_wait();
  if (took < 0.1) fprintf(stderr, "    the wait took %.6f s\n", took);
  CHECK(took >= 0.1);
  pthread_barrier_wait(&s.done);
  pthread_join(t, NULL); /* it exits with its switch still on */
  CHECK(!retryrs_testing_is_on());
  CHECK(one_100ms_wait() >= 0.1);
  pthread_barrier_destroy(&s.on);
  pthread_barrier_destroy(&s.done);
}

static void *read_switch(void *p) {
  *(int *)p = retryrs_testing_is_on() && retryrs_now_ms() == 250;
  return NULL;
}

static void test_the_process_wide_switch_is_asked_for_by_name(void) {
  pthread_t t;
  int seen = 0;
  CHECK_STATUS(retryrs_testing_enable_process_wide(), RETRYRS_OK);
  CHECK_STATUS(retryrs_testing_advance(250), RETRYRS_OK);
  CHECK(pthread_create(&t, NULL, read_switch, &seen) == 0);
  pthread_join(t, NULL);
  CHECK(seen); /* another thread sees the process-wide clock */
  /* this thread's own switch comes first, and leaves the process-wide one on when off */
  CHECK_STATUS(retryrs_testing_enable(), RETRYRS_OK);
  CHECK(retryrs_now_ms() == 0);
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
  CHECK(retryrs_testing_is_on() && retryrs_now_ms() == 250);
  CHECK_STATUS(retryrs_testing_disable_process_wide(), RETRYRS_OK);
  CHECK(!retryrs_testing_is_on());
}

void virtual_time_tests(void) {
  h_run("another thread's virtual time leaves this thread's 100 ms wait real", test_another_threads_switch_leaves_this_threads_waits_real);
  h_run("the process-wide switch is asked for by name", test_the_process_wide_switch_is_asked_for_by_name);
}
