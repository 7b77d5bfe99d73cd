/* The shared policy-document data (tests/policies/), as C: generated into
 * build/c/policies_data.c by tests/c/gen_policies.py. */
#ifndef RETRYRS_TESTS_POLICIES_DATA_H
#define RETRYRS_TESTS_POLICIES_DATA_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  const char *key;
  uint64_t max_attempts;
  double initial_delay_ms;
  double multiplier;
  double max_delay_ms;
  const char *jitter;
  int has_deadline;
  double deadline_ms;
  int has_max_retry_after;
  double max_retry_after_ms;
  int has_seed;
  uint64_t seed;
  const char *name;
  int has_budget;
  size_t waits_len;
  uint64_t waits[8];
} policy_expectation;

typedef struct {
  const char *name;
  const char *document;
  const char *path;
  const char *fragment;
} policy_error_case;

extern const char POLICY_DOC_SHARED[];
extern const char POLICY_DOC_GRPC_SERVICE_CONFIG[];
extern const policy_expectation POLICY_EXPECTED[];
extern const size_t POLICY_EXPECTED_COUNT;
extern const double POLICY_TOKENS_AFTER_PAYMENTS;
extern const size_t POLICY_RATES_WAITS_AFTER_PAYMENTS;
extern const policy_error_case POLICY_ERRORS[];
extern const size_t POLICY_ERROR_COUNT;

#endif
