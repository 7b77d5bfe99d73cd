/* The thread tests alone, for the thread checkers: `make test-c` runs this under helgrind
 * with the shipped suppressions (bindings-c/valgrind/retryrs.supp) and fails on any error.
 * The last line printed is "N passed, N failed". */
#include "harness.h"
#include "suites.h"

int main(void) {
  thread_tests();
  return h_summary() == 0 ? 0 : 1;
}
