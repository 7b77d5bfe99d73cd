/* Every message the engine words names settings as a C program writes them: the
 * retryrs_config and retryrs_breaker_config fields and the functions' parameters, with
 * `_ms` on every duration and times in milliseconds (the core renders each message in
 * C's spelling from its knob table). One case per message kind: a knob's rule (every
 * numeric field), the deadline hint, the exhaustion reasons that name a knob, and the
 * budget's and breaker's own settings. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "retryrs.h"
#include "retryrs_testing.h"
#include "suites.h"

/* The durations, spelt without `_ms` as the contract (and Python) spell them: in a C
 * message each must carry its `_ms`. */
static const char *const DURATIONS[] = {"initial_delay", "max_delay",   "deadline",
                                        "max_retry_after", "attempt_timeout", "ttl",
                                        "sampling_duration", "break_duration", "max_break_duration",
                                        "slow_call_duration"};

static int is_word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

/* Whether `message` holds `expected` and names every duration with its `_ms`. */
static int in_c_spelling(const char *message, const char *expected) {
  size_t i;
  if (strstr(message, expected) == NULL) {
    fprintf(stderr, "  expected \"%s\" in: %s\n", expected, message);
    return 0;
  }
  for (i = 0; i < sizeof DURATIONS / sizeof DURATIONS[0]; i++) {
    size_t n = strlen(DURATIONS[i]);
    const char *at = message;
    while ((at = strstr(at, DURATIONS[i])) != NULL) {
      int starts_word = at == message || !is_word_char(at[-1]);
      int bare = !is_word_char(at[n]);
      if (starts_word && bare) {
        fprintf(stderr, "  '%s' without _ms in: %s\n", DURATIONS[i], message);
        return 0;
      }
      at += n;
    }
  }
  return strstr(message, "maxAttempts") == NULL && strstr(message, "Ms ") == NULL;
}

static void expect_config(retryrs_config c, const char *expected) {
  retryrs_retrier *r = NULL;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_INVALID_ARGUMENT);
  CHECK(in_c_spelling(retryrs_last_error(), expected));
}

static void test_a_broken_knob_rule_names_the_config_field(void) {
  retryrs_config d, c;
  retryrs_config_default(&d);
  c = d; c.max_attempts = 0; expect_config(c, "config->max_attempts must be >= 1");
  c = d; c.initial_delay_ms = -1; expect_config(c, "config->initial_delay_ms must be finite and >= 0");
  c = d; c.multiplier = 0.5; expect_config(c, "config->multiplier must be finite and >= 1");
  c = d; c.initial_delay_ms = 2000; c.max_delay_ms = 1000; expect_config(c, "config->max_delay_ms must be >= initial_delay_ms");
  c = d; c.deadline_ms = -1; expect_config(c, "config->deadline_ms must be finite and >= 0");
  c = d; c.max_retry_after_ms = -1; expect_config(c, "config->max_retry_after_ms must be finite and >= 0");
  c = d; c.has_attempt_timeout = true; c.attempt_timeout_ms = 0; expect_config(c, "config->attempt_timeout_ms must be finite and > 0");
}

typedef struct {
  uint32_t fail_until;
  double hint_ms;
} script;

static retryrs_verdict failing(void *user_data, uint32_t n, double *hint_ms) {
  script *s = (script *)user_data;
  if (s->hint_ms > 0) *hint_ms = s->hint_ms;
  return n < s->fail_until ? RETRYRS_TRANSIENT : RETRYRS_SUCCESS;
}

static void test_exhaustion_names_the_limit_as_c_spells_it(void) {
  retryrs_config c;
  retryrs_retrier *r = NULL;
  retryrs_outcome o;
  script s = {100, 0};
  CHECK_STATUS(retryrs_testing_enable(), RETRYRS_OK);
  /* attempts */
  retryrs_config_default(&c);
  c.max_attempts = 2;
  c.initial_delay_ms = 0;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_call(r, failing, &s, NULL, NULL, &o), RETRYRS_EXHAUSTED);
  CHECK(in_c_spelling(retryrs_last_error(), "gave up after 2 attempts (max_attempts reached)"));
  retryrs_retrier_free(r);
  /* deadline, with the hint: 200 ms doubling to 5 s, 10 attempts, a 15 s deadline */
  retryrs_config_default(&c);
  c.max_attempts = 10;
  c.jitter = RETRYRS_JITTER_NONE;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_call(r, failing, &s, NULL, NULL, &o), RETRYRS_EXHAUSTED);
  CHECK(o.reason == RETRYRS_REASON_DEADLINE);
  CHECK(in_c_spelling(retryrs_last_error(),
                      "(deadline_ms reached); max_attempts=10 needs up to 26200 ms of backoff waits (before "
                      "jitter), deadline_ms is 15000 ms: raise deadline_ms or lower max_attempts"));
  retryrs_retrier_free(r);
  /* retry_after: a hint over max_retry_after_ms */
  retryrs_config_default(&c);
  c.max_retry_after_ms = 100;
  CHECK_STATUS(retryrs_retrier_new(&c, &r), RETRYRS_OK);
  s.hint_ms = 500;
  CHECK_STATUS(retryrs_retrier_call(r, failing, &s, NULL, NULL, &o), RETRYRS_EXHAUSTED);
  CHECK(o.reason == RETRYRS_REASON_RETRY_AFTER);
  CHECK(in_c_spelling(retryrs_last_error(), "server asked to wait longer than max_retry_after_ms"));
  retryrs_retrier_free(r);
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
}

static void test_budget_and_breaker_settings_carry_ms(void) {
  retryrs_budget *b = NULL;
  retryrs_breaker_config bc;
  retryrs_breaker *k = NULL;
  CHECK_STATUS(retryrs_budget_new(10, 20, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(in_c_spelling(retryrs_last_error(), "token_ratio must be > 0 and <= max_tokens, got 20"));
  CHECK_STATUS(retryrs_budget_new_ratio(500, 10, 0.2, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(in_c_spelling(retryrs_last_error(), "retryrs_budget_new_ratio: ttl_ms must be in [1 s, 60 s], got 500 ms"));
  retryrs_breaker_config_init(&bc);
  bc.break_duration_ms = 0.5;
  CHECK_STATUS(retryrs_breaker_new(&bc, &k), RETRYRS_INVALID_ARGUMENT);
  CHECK(in_c_spelling(retryrs_last_error(), "config->break_duration_ms must be >= 1 ms and <= 1 day, got 0.5 ms"));
  retryrs_breaker_config_init(&bc);
  bc.break_duration_ms = 5000;
  bc.max_break_duration_ms = 10;
  CHECK_STATUS(retryrs_breaker_new(&bc, &k), RETRYRS_INVALID_ARGUMENT);
  CHECK(in_c_spelling(retryrs_last_error(), "config->max_break_duration_ms must be >= break_duration_ms"));
}

void messages_tests(void) {
  h_run("a broken knob rule names the config field", test_a_broken_knob_rule_names_the_config_field);
  h_run("exhaustion names the limit as C spells it", test_exhaustion_names_the_limit_as_c_spells_it);
  h_run("budget and breaker settings carry _ms", test_budget_and_breaker_settings_carry_ms);
}
