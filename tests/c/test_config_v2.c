/* Issue 11's knob parts in C: max_retry_after_ms and RETRYRS_REASON_RETRY_AFTER, a result
 * rejected by the attempt callback (it answers TRANSIENT), the config's struct_size (ABI
 * growth), and error messages that name the C function and field and print huge numbers
 * compactly. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "retryrs.h"
#include "retryrs_testing.h"
#include "suites.h"

static int has(const char *haystack, const char *needle) {
  if (haystack && strstr(haystack, needle)) return 1;
  fprintf(stderr, "    message \"%s\" lacks \"%s\"\n", haystack ? haystack : "(null)", needle);
  return 0;
}

typedef struct {
  int calls;
  double hint_ms;
  int rejected_values; /* attempts that got a value the program does not accept */
} server;

/* Every attempt "gets a 503 page": a value, not an error, that the program does not
 * accept, so it answers TRANSIENT with the page's Retry-After. */
static retryrs_verdict busy_page(void *user_data, uint32_t attempt, double *hint_ms) {
  server *s = (server *)user_data;
  (void)attempt;
  s->calls++;
  s->rejected_values++;
  *hint_ms = s->hint_ms;
  return RETRYRS_TRANSIENT;
}

static void test_max_retry_after_defaults_to_60s_and_ends_the_call(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_outcome out = {0, RETRYRS_REASON_NONE};
  server s = {0, 3600000.0, 0};
  CHECK_STATUS(retryrs_config_default(&c), RETRYRS_OK);
  CHECK(c.has_max_retry_after && c.max_retry_after_ms == 60000.0);
  c.has_deadline = false;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  retryrs_testing_enable();
  CHECK_STATUS(retryrs_retrier_call(r, busy_page, &s, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK(out.reason == RETRYRS_REASON_RETRY_AFTER && out.attempts == 1 && s.calls == 1);
  CHECK(has(retryrs_last_error(), "after 1 attempt ("));
  retryrs_retrier_free(r);
  /* Off: an hour is waited out (virtually), then the attempts run out. */
  c.has_max_retry_after = false;
  c.max_attempts = 2;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  s.calls = 0;
  CHECK_STATUS(retryrs_retrier_call(r, busy_page, &s, NULL, NULL, &out), RETRYRS_EXHAUSTED);
  CHECK(out.reason == RETRYRS_REASON_ATTEMPTS && s.calls == 2);
  retryrs_testing_disable();
  retryrs_retrier_free(r);
}

static void test_struct_size_is_checked(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  CHECK_STATUS(retryrs_config_default(&c), RETRYRS_OK);
  CHECK(c.struct_size == sizeof c);
  /* A size this library does not know: nothing written, nothing created. */
  memset(&c, 0xAB, sizeof c);
  CHECK_STATUS(retryrs_config_init(&c, sizeof c + 8), RETRYRS_INVALID_ARGUMENT);
  CHECK(has(retryrs_last_error(), "retryrs_config_init: struct_size is"));
  CHECK(((unsigned char *)&c)[0] == 0xAB);
  CHECK_STATUS(retryrs_config_default(&c), RETRYRS_OK);
  c.struct_size = 5; /* e.g. a 0.1 config, whose first field was max_attempts */
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_INVALID_ARGUMENT);
  CHECK(r == NULL);
  CHECK(has(retryrs_last_error(), "retryrs_retrier_new: config->struct_size is 5"));
}

static void test_messages_name_the_function_and_field_compactly(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  CHECK_STATUS(retryrs_config_default(&c), RETRYRS_OK);
  c.initial_delay_ms = -1;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_INVALID_ARGUMENT);
  CHECK(has(retryrs_last_error(), "retryrs_retrier_new: config->initial_delay_ms must be finite and >= 0 (at most about 285,000 years), got -1 ms"));
  CHECK_STATUS(retryrs_config_default(&c), RETRYRS_OK);
  c.max_retry_after_ms = 1e300;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_INVALID_ARGUMENT);
  CHECK(has(retryrs_last_error(), "config->max_retry_after_ms must be finite and >= 0 (at most about 285,000 years), got 1e300 ms"));
  CHECK(strlen(retryrs_last_error()) < 120);
  CHECK_STATUS(retryrs_config_default(&c), RETRYRS_OK);
  c.has_max_retry_after = false;
  c.max_retry_after_ms = NAN; /* ignored when off, like deadline_ms */
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  retryrs_retrier_free(r);
}

void config_v2_tests(void) {
  h_run("max_retry_after defaults to 60 s and ends the call (reason retry_after)", test_max_retry_after_defaults_to_60s_and_ends_the_call);
  h_run("the config's struct_size is checked", test_struct_size_is_checked);
  h_run("messages name the C function and field, huge numbers compactly", test_messages_name_the_function_and_field_compactly);
}
