/* The test groups main.c runs. */
#ifndef RETRYRS_TESTS_SUITES_H
#define RETRYRS_TESTS_SUITES_H

#ifdef __cplusplus
extern "C" {
#endif

void api_tests(void);
void thread_tests(void);
void virtual_time_tests(void);
void cpp17_tests(void);
void cpp_tests(void);
void contract_v2_tests(void);
void config_v2_tests(void);
void policies_tests(void);
void breaker_tests(void);
void budget_kind_tests(void);
void bound_tests(void);
void hooks_tests(void);
void messages_tests(void);
void error_tests(void);

#ifdef __cplusplus
}
#endif

#endif
