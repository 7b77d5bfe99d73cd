// A C++17 translation unit including the header: it must compile warning-free under
// -std=c++17 -Wall -Wextra -Werror -pedantic and work from C++ code (lambdas as
// callbacks, RAII owners).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "retryrs.h"
#include "retryrs_testing.h"
#include "harness.h"
#include "suites.h"

namespace {

struct RetrierDeleter {
  void operator()(retryrs_retrier *r) const noexcept { retryrs_retrier_free(r); }
};
using Retrier = std::unique_ptr<retryrs_retrier, RetrierDeleter>;

void cpp_lambdas_and_raii() {
  retryrs_config c{};
  CHECK_STATUS(retryrs_config_default(&c), RETRYRS_OK);
  const std::string name = "cpp";
  c.name = name.c_str();
  c.jitter = RETRYRS_JITTER_NONE;
  c.initial_delay_ms = 10;
  retryrs_retrier *raw = nullptr;
  CHECK_STATUS(retryrs_retrier_new(&c, &raw), RETRYRS_OK);
  Retrier r(raw);

  std::vector<std::string> seen;
  retryrs_listener l{[](void *ud, const retryrs_event *e) {
                       auto *v = static_cast<std::vector<std::string> *>(ud);
                       v->push_back(std::string(e->name) + ":" + std::to_string(e->kind));
                     },
                     &seen};
  int calls = 0;
  auto attempt = [](void *ud, uint32_t, double *hint) -> retryrs_verdict {
    int &n = *static_cast<int *>(ud);
    if (++n < 2) {
      *hint = 20;
      return RETRYRS_TRANSIENT;
    }
    return RETRYRS_SUCCESS;
  };
  retryrs_outcome out{};
  CHECK_STATUS(retryrs_testing_enable(), RETRYRS_OK);
  CHECK_STATUS(retryrs_retrier_call(r.get(), attempt, &calls, &l, nullptr, &out), RETRYRS_OK);
  CHECK(retryrs_now_ms() == 20);
  CHECK_STATUS(retryrs_testing_disable(), RETRYRS_OK);
  CHECK(calls == 2 && out.attempts == 2);
  CHECK(seen.size() == 3);
  CHECK(!seen.empty() && seen.front() == "cpp:" + std::to_string(RETRYRS_EVENT_ATTEMPT_FAILED));
  CHECK(std::strcmp(retryrs_version(), RETRYRS_VERSION) == 0);
}

}  // namespace

extern "C" void cpp17_tests(void) { h_run("C++17: lambdas, RAII and the header", cpp_lambdas_and_raii); }
