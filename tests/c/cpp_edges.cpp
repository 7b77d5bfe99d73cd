// retryrs.hpp at its edges (tests/c/cpp_edges.sh builds this with and without
// -fno-exceptions):
//   cpp_edges alloc          the factories and their errors, and no operator new per call()
//                            or run() (a counting global operator new), with and without a
//                            listener or a CancelToken; exit 0 if every check passed
//   cpp_edges c|cpp N        N calls through the C API or through retryrs.hpp, each
//                            failing once and then succeeding with no wait: what
//                            cpp_edges.sh counts instructions of (the difference of two N)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "retryrs.hpp"

static std::size_t news = 0;

void *operator new(std::size_t n) {
  news++;
  if (void *p = std::malloc(n ? n : 1)) return p;
  std::abort();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }

namespace {

int failures = 0;

void check(bool ok, const char *what) {
  if (!ok) {
    failures++;
    std::fprintf(stderr, "  cpp_edges: FAILED: %s\n", what);
  }
}

retryrs_verdict c_attempt(void *user_data, std::uint32_t n, double *hint_ms) {
  (void)user_data, (void)hint_ms;
  return n < 2 ? RETRYRS_TRANSIENT : RETRYRS_SUCCESS;
}

retryrs::Config config() { return retryrs::Config().max_attempts(3).initial_delay(std::chrono::milliseconds(0)); }

// operator new calls made by `body` run `times` times, after one warm-up run.
template <class Body>
std::size_t news_per(int times, Body &&body) {
  body();
  const std::size_t before = news;
  for (int i = 0; i < times; i++) body();
  return news - before;
}

void alloc_checks() {
  retryrs::Expected<retryrs::Retrier> bad = retryrs::Retrier::make(retryrs::Config().max_attempts(0));
  check(!bad && bad.status() == RETRYRS_INVALID_ARGUMENT, "Retrier::make refuses max_attempts 0");
  check(bad.message().rfind("retryrs_retrier_new: config->max_attempts", 0) == 0, "its message names the field");
  check(!retryrs::Budget::make(-1, 0.1), "Budget::make refuses -1 tokens");
  retryrs::Expected<retryrs::Policies> doc = retryrs::Policies::parse(R"({"policies": {"a": {"max_attempts": 2}}})");
  check(doc.ok(), "Policies::parse reads a document");
  if (doc) {
    check(!doc->find("nope") && doc->find("nope").message().find("nope") != std::string::npos, "find names the name");
    check(doc->make_retrier("a").ok(), "make_retrier builds the named policy's retrier");
  }
  check(!retryrs::Policies::parse("{"), "Policies::parse refuses bad JSON");

  retryrs::Expected<retryrs::Retrier> made = retryrs::Retrier::make(config());
  check(made.ok(), "Retrier::make");
  if (!made) return;
  const retryrs::Retrier &r = *made;
  const retryrs::CancelToken token;
  unsigned events = 0;
  const retryrs::Listener listener = [&events](const retryrs::Event &) { events++; };
  int n = 0;
  auto attempt = [&n](std::uint32_t k) { n++; return k < 2 ? retryrs::Verdict::transient() : retryrs::Verdict::success(); };
  check(news_per(100, [&] { check(r.call(attempt).ok(), "call"); }) == 0, "call(attempt) allocates nothing");
  check(news_per(100, [&] { check(r.call(attempt, listener).ok(), "call"); }) == 0,
        "call(attempt, listener) allocates nothing");
  check(events >= 300, "the listener saw the events");
  check(news_per(100, [&] { check(r.call(attempt, {}, &token).ok(), "call"); }) == 0,
        "call(attempt, {}, &token) allocates nothing");
  check(news_per(100, [&] {
          auto res = r.run([](std::uint32_t k) { return int(k); },
                           [](int v) { return v < 2 ? retryrs::Verdict::transient() : retryrs::Verdict::success(); });
          check(res.ok() && res.value == 2, "run");
        }) == 0,
        "run(attempt, accept) allocates nothing");
  std::printf("cpp_edges (%s): factories and their errors; 0 operator new per call(), with a listener, with a "
              "token, and per run()\n",
              RETRYRS_HPP_EXCEPTIONS ? "exceptions" : "-fno-exceptions");
}

}  // namespace

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "alloc";
  if (std::strcmp(mode, "alloc") == 0) {
    alloc_checks();
    return failures == 0 ? 0 : 1;
  }
  const long calls = argc > 2 ? std::atol(argv[2]) : 1000;
  retryrs::Expected<retryrs::Retrier> made = retryrs::Retrier::make(config());
  if (!made) return 2;
  const retryrs::Retrier &r = *made;
  long ok = 0;
  if (std::strcmp(mode, "c") == 0) {
    for (long i = 0; i < calls; i++) {
      retryrs_outcome out;
      ok += retryrs_retrier_call(r.get(), c_attempt, nullptr, nullptr, nullptr, &out) == RETRYRS_OK;
    }
  } else {
    for (long i = 0; i < calls; i++) {
      ok += r.call([](std::uint32_t k) { return k < 2 ? retryrs::Verdict::transient() : retryrs::Verdict::success(); })
                .ok();
    }
  }
  return ok == calls ? 0 : 1;
}
