/* Built by `make pkgconfig-c` with `cc app.c $(pkg-config --cflags --libs retryrs)`
 * against an installed prefix: the headers (retryrs.h and retryrs_testing.h), the library
 * and the .pc file agree on the version (argv[1] is `pkg-config --modversion retryrs`), and
 * a call works. */
#include <retryrs.h>
#include <retryrs_testing.h>
#include <stdio.h>
#include <string.h>

static retryrs_verdict once(void *user_data, uint32_t attempt, double *hint_ms) {
  (void)user_data;
  (void)hint_ms;
  return attempt < 2 ? RETRYRS_TRANSIENT : RETRYRS_SUCCESS;
}

int main(int argc, char **argv) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_outcome out;
  int ok;
  retryrs_config_default(&c);
  c.initial_delay_ms = 0;
  c.max_delay_ms = 0;
  if (retryrs_retrier_new(&c, &r) != RETRYRS_OK) return 1;
  ok = retryrs_retrier_call(r, once, NULL, NULL, NULL, &out) == RETRYRS_OK && out.attempts == 2 &&
       strcmp(retryrs_version(), RETRYRS_VERSION) == 0 && argc > 1 && strcmp(argv[1], RETRYRS_VERSION) == 0 && !retryrs_testing_is_on();
  retryrs_retrier_free(r);
  printf("pkg-config app: retryrs %s (header %s, pkg-config %s): %s\n", retryrs_version(), RETRYRS_VERSION,
         argc > 1 ? argv[1] : "?", ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
