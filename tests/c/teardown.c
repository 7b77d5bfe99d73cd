/* The library at the edges of a process: calls from an atexit handler and from pthread
 * key destructors (after the thread's own thread-local storage was torn down) keep every
 * promise: statuses, retryrs_last_error(), a seed for an unseeded retrier. Run as
 *   teardown atexit          the handler's checks decide the exit status (main returns 3,
 *                            so a handler that never ran fails too)
 *   teardown key             a thread whose only calls are made in its key destructor
 *                            (run under valgrind: it must leak nothing)
 *   teardown key-after-use   a thread that used the library, then calls it again from its
 *                            key destructor
 * Exit status 0 means every check passed. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "teardown.h"

static pthread_key_t key;
static int key_failures;

static void at_exit(void) {
  int failures = td_exercise("atexit");
  fflush(NULL);
  _exit(failures == 0 ? 0 : 1);
}

static void key_destructor(void *value) {
  (void)value;
  key_failures += td_exercise("pthread key destructor");
}

static void *only_in_destructor(void *arg) {
  (void)arg;
  pthread_setspecific(key, &key);
  return NULL;
}

static void *use_then_destructor(void *arg) {
  (void)arg;
  key_failures += td_exercise("thread");
  pthread_setspecific(key, &key);
  return NULL;
}

static int run_key(void *(*body)(void *), int expected_runs) {
  pthread_t t;
  if (pthread_key_create(&key, key_destructor) != 0 || pthread_create(&t, NULL, body, NULL) != 0) return 2;
  pthread_join(t, NULL);
  pthread_key_delete(key);
  if (td_ran != expected_runs) {
    fprintf(stderr, "the key destructor ran the checks %d times, expected %d\n", td_ran, expected_runs);
    return 1;
  }
  return key_failures == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "atexit") == 0) {
    /* The library was used in main first, as a real program would have. */
    if (td_exercise("main") != 0) return 1;
    atexit(at_exit);
    return 3;
  }
  if (strcmp(mode, "key") == 0) return run_key(only_in_destructor, 1);
  if (strcmp(mode, "key-after-use") == 0) return run_key(use_then_destructor, 2);
  fprintf(stderr, "usage: %s atexit|key|key-after-use\n", argv[0]);
  return 2;
}
