// The C++ counterpart of pkgconfig_app.c, built against an installed prefix with
// `c++ -std=c++17 app.cpp $(pkg-config --cflags --libs retryrs)` by `make pkgconfig-c`
// and with CMake's retryrs::retryrs_cpp by the C release tarball's test: retryrs.hpp is
// installed next to retryrs.h, the versions agree (argv[1] is the packaged version), and
// a call with a lambda and a std::chrono delay works.
#include <retryrs.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  using namespace std::chrono_literals;
  const retryrs::Retrier r(retryrs::Config().initial_delay(0ms).max_delay(0ms));
  const retryrs::Outcome out =
      r.call([](std::uint32_t attempt) { return attempt < 2 ? retryrs::Verdict::transient() : retryrs::Verdict::success(); });
  const bool ok = out.ok() && out.attempts == 2 && std::strcmp(retryrs_version(), RETRYRS_VERSION) == 0 && argc > 1 &&
                  std::strcmp(argv[1], RETRYRS_VERSION) == 0;
  std::printf("C++ app: retryrs %s (header %s, packaged %s): %s\n", retryrs_version(), RETRYRS_VERSION,
              argc > 1 ? argv[1] : "?", ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
