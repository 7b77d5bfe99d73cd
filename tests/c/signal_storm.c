/* SIGUSR1 storms a worker that retries with a fresh cancel token each call; the handler
 * cancels the worker's current call with retryrs_cancel_fire_from_signal(). The handler
 * runs on the worker itself (pthread_kill), interrupting the library anywhere, so a
 * cancel that took a lock or allocated would deadlock sooner or later. Every other call
 * waits on a child of the fired token (the linked path), made while the handler may fire
 * the parent. The worker blocks SIGUSR1 while it swaps and frees its token, so the
 * handler never sees a freed one. With retryrs_cancel_fire() in the handler this hangs
 * (the parent's lock, or malloc's, held by the code the signal interrupted).
 *
 * Exits 0 after SECONDS (argv[1], default 3; `make test-c-signal-storm
 * SIGNAL_STORM_SECONDS=60` for the long run) if the worker finished every call, some
 * calls were cut by a signal and none ever took longer than the watchdog allows (a
 * hang); prints the counts. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "retryrs.h"

static retryrs_retrier *retrier;
/* The token the handler fires: set and cleared with SIGUSR1 blocked. */
static retryrs_cancel *volatile current;
static atomic_bool stop, finished;
static atomic_ulong calls, cancelled, signals;
static atomic_ullong last_progress_ms;

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void on_usr1(int sig) {
  (void)sig;
  retryrs_cancel *c = current;
  if (c) {
    retryrs_cancel_fire_from_signal(c);
  }
  atomic_fetch_add(&signals, 1);
}

/* Fails at once every time: the call retries, waiting 1-5 ms between attempts, until
 * its attempts run out or a signal cancels it. */
static retryrs_verdict failing(void *user_data, uint32_t attempt, double *hint_ms) {
  (void)user_data, (void)attempt, (void)hint_ms;
  return RETRYRS_TRANSIENT;
}

static void set_mask(int how) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(how, &set, NULL);
}

static void *worker(void *arg) {
  (void)arg;
  unsigned long n = 0;
  while (!atomic_load(&stop)) {
    retryrs_cancel *token = NULL, *child = NULL;
    set_mask(SIG_BLOCK);
    if (retryrs_cancel_new(&token) != RETRYRS_OK) {
      fprintf(stderr, "signal_storm: %s\n", retryrs_last_error());
      exit(1);
    }
    current = token;
    set_mask(SIG_UNBLOCK);
    /* Linked while the handler may fire the parent: linking holds the parent's lock. */
    if (retryrs_cancel_child(token, &child) != RETRYRS_OK) {
      fprintf(stderr, "signal_storm: %s\n", retryrs_last_error());
      exit(1);
    }
    retryrs_outcome outcome;
    retryrs_status s = retryrs_retrier_call(retrier, failing, NULL, NULL, n % 2 ? child : token, &outcome);
    set_mask(SIG_BLOCK);
    current = NULL;
    set_mask(SIG_UNBLOCK);
    retryrs_cancel_free(child);
    retryrs_cancel_free(token);
    if (s == RETRYRS_CANCELLED) {
      atomic_fetch_add(&cancelled, 1);
    } else if (s != RETRYRS_EXHAUSTED) {
      fprintf(stderr, "signal_storm: call %lu returned %s: %s\n", n, retryrs_status_name(s), retryrs_last_error());
      exit(1);
    }
    atomic_fetch_add(&calls, 1);
    atomic_store(&last_progress_ms, now_ms());
    n++;
  }
  atomic_store(&finished, true);
  return NULL;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 3;
  const uint64_t watchdog_ms = 5000; /* a call takes at most ~100 ms here */
  retryrs_config config;
  retryrs_config_default(&config);
  config.max_attempts = 20;
  config.initial_delay_ms = 1;
  config.max_delay_ms = 5;
  config.jitter = RETRYRS_JITTER_NONE;
  if (retryrs_retrier_new(&config, &retrier) != RETRYRS_OK) {
    fprintf(stderr, "signal_storm: %s\n", retryrs_last_error());
    return 1;
  }
  struct sigaction sa = {0};
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, NULL);

  pthread_t t;
  atomic_store(&last_progress_ms, now_ms());
  pthread_create(&t, NULL, worker, NULL);
  uint64_t end = now_ms() + (uint64_t)(seconds * 1000);
  unsigned long sent = 0;
  struct timespec gap = {0, 20 * 1000}; /* 20 us: tens of thousands of signals a second */
  while (now_ms() < end) {
    pthread_kill(t, SIGUSR1);
    sent++;
    nanosleep(&gap, NULL);
    if (now_ms() - atomic_load(&last_progress_ms) > watchdog_ms) {
      fprintf(stderr, "signal_storm: HANG: no call finished for %llu ms (%lu calls, %lu signals sent)\n",
              (unsigned long long)watchdog_ms, atomic_load(&calls), sent);
      _exit(2);
    }
  }
  atomic_store(&stop, true);
  /* The last call is watched too: a worker stuck in it never sets `finished`. */
  uint64_t give_up = now_ms() + watchdog_ms;
  while (!atomic_load(&finished)) {
    if (now_ms() > give_up) {
      fprintf(stderr, "signal_storm: HANG: the worker did not finish its last call\n");
      _exit(2);
    }
    struct timespec tick = {0, 1000 * 1000};
    nanosleep(&tick, NULL);
  }
  pthread_join(t, NULL);
  retryrs_retrier_free(retrier);
  printf("signal storm: %.0f s, %lu signals sent (%lu handled), %lu calls, %lu cancelled by a signal\n", seconds, sent,
         atomic_load(&signals), atomic_load(&calls), atomic_load(&cancelled));
  if (atomic_load(&cancelled) == 0 || atomic_load(&calls) < 10) {
    fprintf(stderr, "signal_storm: the storm cancelled nothing: the test did not test\n");
    return 1;
  }
  return 0;
}
