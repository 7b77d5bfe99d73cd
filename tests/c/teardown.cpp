// The library from C++ destructors that run during teardown: a static object's destructor
// (after main returned and Rust's thread-locals of the main thread were destroyed) and a
// thread_local object's destructor (registered before the library's first use on that
// thread, so it runs after anything the library registered). Run as
//   teardown-cpp static         main returns 3; the destructor's checks decide the status
//   teardown-cpp thread_local   exit status 0 when the thread's destructor passed
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "teardown.h"

namespace {

bool check_in_static_destructor = false;

struct AtExit {
  ~AtExit() {
    if (!check_in_static_destructor) return;
    const int failures = td_exercise("C++ static destructor");
    std::fflush(nullptr);
    _exit(failures == 0 ? 0 : 1);
  }
};
AtExit at_exit;

int thread_failures = -1;

struct InThread {
  ~InThread() { thread_failures = td_exercise("C++ thread_local destructor"); }
};

}  // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "static") {
    if (td_exercise("main") != 0) return 1;
    check_in_static_destructor = true;
    return 3;
  }
  if (mode == "thread_local") {
    std::thread t([] {
      thread_local InThread registered_first;
      (void)&registered_first;
      thread_failures = td_exercise("thread");
    });
    t.join();
    return thread_failures == 0 && td_ran == 2 ? 0 : 1;
  }
  std::fprintf(stderr, "usage: %s static|thread_local\n", argv[0]);
  return 2;
}
