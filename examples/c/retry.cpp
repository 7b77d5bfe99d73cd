// retryrs from C++17: the C API with a lambda as the attempt callback and a unique_ptr
// owning the retrier. It retries a flaky operation (two transient failures, then a
// success) and checks what happened; the waits run in virtual time (retryrs_testing.h),
// so it finishes at once. The Makefile and CMakeLists.txt beside this file build it
// against the installed package: `./retry` exits 0 when all is as expected.
#include <cstdint>
#include <cstdio>
#include <memory>

#include <retryrs.h>
#include <retryrs_testing.h>

namespace {

struct RetrierDeleter {
  void operator()(retryrs_retrier *r) const noexcept { retryrs_retrier_free(r); }
};
using Retrier = std::unique_ptr<retryrs_retrier, RetrierDeleter>;

struct Flaky {
  std::uint32_t failures_left;
  std::uint32_t calls;
};

}  // namespace

int main() {
  if (retryrs_testing_enable() != RETRYRS_OK) return 1;
  retryrs_config config{};
  retryrs_config_default(&config);
  config.name = "cpp-example";
  retryrs_retrier *raw = nullptr;
  if (retryrs_retrier_new(&config, &raw) != RETRYRS_OK) {
    std::fprintf(stderr, "retryrs_retrier_new: %s\n", retryrs_last_error());
    return 1;
  }
  Retrier retrier(raw);

  Flaky flaky{2, 0};
  // A captureless lambda converts to the C function pointer retryrs_attempt_fn.
  auto attempt = [](void *user_data, std::uint32_t, double *) -> retryrs_verdict {
    auto *op = static_cast<Flaky *>(user_data);
    ++op->calls;
    if (op->failures_left > 0) {
      --op->failures_left;
      return RETRYRS_TRANSIENT;
    }
    return RETRYRS_SUCCESS;
  };
  retryrs_outcome outcome{};
  retryrs_status status = retryrs_retrier_call(retrier.get(), attempt, &flaky, nullptr, nullptr, &outcome);
  std::printf("retry (C++): %s after %u attempts\n", retryrs_status_name(status), outcome.attempts);
  return status == RETRYRS_OK && outcome.attempts == 3 && flaky.calls == 3 ? 0 : 1;
}
