/* A race in the program's own code, inside an attempt callback the library runs on two
 * threads: the thread checkers must still report it with the shipped suppressions (they
 * cover the library's own accesses only). scripts/dist/c-tarball-checkers expects errors
 * from this program under helgrind and DRD. */
#include <pthread.h>
#include <stdio.h>

#include "retryrs.h"

static retryrs_retrier *retrier;
static unsigned long unguarded; /* written by both threads without a lock: the race */

static retryrs_verdict attempt(void *user_data, uint32_t n, double *hint_ms) {
  (void)user_data, (void)hint_ms;
  unguarded++;
  return n < 2 ? RETRYRS_TRANSIENT : RETRYRS_SUCCESS;
}

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 20; i++) {
    retryrs_outcome o;
    retryrs_retrier_call(retrier, attempt, NULL, NULL, NULL, &o);
  }
  return NULL;
}

int main(void) {
  retryrs_config c;
  retryrs_config_default(&c);
  c.initial_delay_ms = 0;
  if (retryrs_retrier_new(&c, &retrier) != RETRYRS_OK) {
    fprintf(stderr, "user_race: %s\n", retryrs_last_error());
    return 1;
  }
  pthread_t a, b;
  pthread_create(&a, NULL, worker, NULL);
  pthread_create(&b, NULL, worker, NULL);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  retryrs_retrier_free(retrier);
  printf("user_race: %lu attempts\n", unguarded);
  return 0;
}
