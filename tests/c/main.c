/* The C test suite: API tests, thread tests, the C++17 units and the conformance
 * vectors. argv[1], if given, is where the conformance report ("c N M") goes.
 * The last line printed is "N passed, N failed". */
#include <stdio.h>

#include "conformance.h"
#include "harness.h"
#include "suites.h"

int main(int argc, char **argv) {
  api_tests();
  thread_tests();
  virtual_time_tests();
  cpp17_tests();
  cpp_tests();
  contract_v2_tests();
  config_v2_tests();
  policies_tests();
  breaker_tests();
  budget_kind_tests();
  bound_tests();
  hooks_tests();
  messages_tests();
  error_tests();
  run_conformance(argc > 1 ? argv[1] : NULL);
  return h_summary() == 0 ? 0 : 1;
}
