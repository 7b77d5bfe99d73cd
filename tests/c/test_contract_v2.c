/* Contract v2 in C: the HTTP classifier, budget ratios that truncate to nothing, and (below)
 * calls driven from their own callbacks, frees from inside callbacks and a retrier freed
 * on another thread mid-call. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "retryrs.h"
#include "suites.h"

static void test_http_classify_follows_the_contract(void) {
  retryrs_verdict v = -1;
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_TRANSIENT);
  CHECK_STATUS(retryrs_http_classify("POST", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_SUCCESS);
  CHECK_STATUS(retryrs_http_classify("POST", RETRYRS_HTTP_NETWORK_FAILED, 0, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_PERMANENT);
  CHECK_STATUS(retryrs_http_classify("POST", RETRYRS_HTTP_CONNECT_FAILED, 0, NULL, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_TRANSIENT);
  const char *const methods[] = {"POST"};
  const int32_t statuses[] = {409};
  CHECK_STATUS(retryrs_http_classify("post", RETRYRS_HTTP_RESPONSE, 409, methods, 1, statuses, 1, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_TRANSIENT);
  /* An empty (non-NULL) list is empty, not the default. */
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 503, methods, 0, NULL, 0, &v), RETRYRS_OK);
  CHECK(v == RETRYRS_SUCCESS);
}

static void test_http_classify_rejects_bad_arguments_by_name(void) {
  retryrs_verdict v = -1;
  const char *const with_null[] = {"GET", NULL};
  CHECK_STATUS(retryrs_http_classify(NULL, RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "method") != NULL);
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 0, NULL), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "verdict") != NULL);
  CHECK_STATUS(retryrs_http_classify("GET", 7, 503, NULL, 0, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "outcome") != NULL);
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 70000, NULL, 0, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "status") != NULL);
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 503, NULL, 2, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "retry_methods") != NULL);
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 503, with_null, 2, NULL, 0, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "retry_methods[1]") != NULL);
  CHECK_STATUS(retryrs_http_classify("GET", RETRYRS_HTTP_RESPONSE, 503, NULL, 0, NULL, 3, &v), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "retry_statuses") != NULL);
  CHECK(v == -1); /* never written on failure */
}

static void test_budget_values_that_truncate_to_nothing_are_named(void) {
  retryrs_budget *b = NULL;
  CHECK_STATUS(retryrs_budget_new(1e-9, 1e-9, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "max_tokens") != NULL);
  CHECK_STATUS(retryrs_budget_new(10, 0.0004, &b), RETRYRS_INVALID_ARGUMENT);
  CHECK(strstr(retryrs_last_error(), "token_ratio") != NULL);
  CHECK(b == NULL);
}

void contract_v2_tests(void) {
  h_run("http classify follows the contract", test_http_classify_follows_the_contract);
  h_run("http classify rejects bad arguments by name", test_http_classify_rejects_bad_arguments_by_name);
  h_run("budget values that truncate to nothing are named", test_budget_values_that_truncate_to_nothing_are_named);
}
