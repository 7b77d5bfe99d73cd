/* A program as it was written and compiled against retryrs 0.1, whose retryrs_config had
 * no struct_size: the 0.1 layout and prototypes are spelt out here (this file does not
 * include today's retryrs.h), exactly as 0.1's header declared them. Run against today's
 * library it must be refused cleanly (RETRYRS_INVALID_ARGUMENT, a message naming
 * struct_size, nothing created, no invalid read under valgrind), never misread. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef int32_t retryrs_status;
#define RETRYRS_OK_V01 0
#define RETRYRS_INVALID_ARGUMENT_V01 4

/* retryrs 0.1's struct, field for field (96 bytes on x86_64). */
typedef struct retryrs_config_v01 {
  uint64_t max_attempts;
  double initial_delay_ms;
  double multiplier;
  double max_delay_ms;
  int32_t jitter;
  double jitter_factor;
  bool has_deadline;
  double deadline_ms;
  bool has_seed;
  uint64_t seed;
  const char *name;
  const void *budget;
} retryrs_config_v01;

retryrs_status retryrs_retrier_new(const retryrs_config_v01 *config, void **out);
const char *retryrs_last_error(void);
void retryrs_retrier_free(void *retrier);

int main(void) {
  /* 0.1's defaults, filled by hand (0.1's retryrs_config_default is gone: see
   * v01_default.c), with a few typical changes. */
  retryrs_config_v01 c = {5, 100.0, 2.0, 1000.0, 0 /* none */, 0.0, true, 15000.0, true, 42, "rates", NULL};
  void *retrier = (void *)&c; /* must stay untouched */
  retryrs_status s = retryrs_retrier_new(&c, &retrier);
  const char *msg = retryrs_last_error();
  int ok = s == RETRYRS_INVALID_ARGUMENT_V01 && retrier == (void *)&c && msg && strstr(msg, "struct_size") &&
           strstr(msg, "retryrs_retrier_new") && strstr(msg, "recompiled");
  printf("0.1 program against this library: status %d, \"%s\": %s\n", (int)s, msg ? msg : "(none)",
         ok ? "refused cleanly" : "NOT REFUSED");
  if (s == RETRYRS_OK_V01) retryrs_retrier_free(retrier);
  return ok ? 0 : 1;
}
