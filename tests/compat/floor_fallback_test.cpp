// The glibc floor's own implementations (common/glibc_floor/runtime*.c),
// which run where glibc lacks the function (glibc 2.28, 2.29; no such root
// can be made here): built with GPUMEMREC_FLOOR_FALLBACK_ONLY, so the
// running glibc's functions are never used (ctest compat.floor_fallback).
// libstdc++ and libgcc are linked in statically, as in the shipped files, so
// a C++ exception goes through libgcc's unwinder and the floor's
// _dl_find_object, and std::random_device through its arc4random.
#include <errno.h>
#include <link.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>

#include <cstdio>
#include <random>
#include <set>
#include <stdexcept>
#include <string>

extern "C" const char* sigabbrev_np(int sig);

namespace {

int g_failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++g_failures;
  }
}

int64_t now_ns(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) void thrower(int depth) {
  if (depth == 0) throw std::runtime_error("through the floor's _dl_find_object");
  thrower(depth - 1);
  asm volatile("");
}

void exceptions() {
  std::string caught;
  try {
    thrower(5);
  } catch (const std::exception& e) {
    caught = e.what();
  }
  check(caught == "through the floor's _dl_find_object", "exception not caught: '" + caught + "'");
}

void random_numbers() {
  std::random_device rd;  // "default": arc4random in libstdc++ 12's random.cc on glibc 2.36 headers
  std::set<unsigned> seen;
  for (int i = 0; i < 64; ++i) seen.insert(rd());
  check(seen.size() >= 60, "std::random_device gave " + std::to_string(seen.size()) + " distinct values of 64");
}

void semaphores() {
  sem_t s;
  sem_init(&s, 0, 0);
  int64_t start = now_ns(CLOCK_MONOTONIC), deadline = start + 150 * 1000000;
  timespec ts = {time_t(deadline / 1000000000), long(deadline % 1000000000)};
  int rc = sem_clockwait(&s, CLOCK_MONOTONIC, &ts);
  int err = errno;
  int64_t waited_ms = (now_ns(CLOCK_MONOTONIC) - start) / 1000000;
  check(rc == -1 && err == ETIMEDOUT, "sem_clockwait on an empty semaphore: rc " + std::to_string(rc) + " errno " +
                                          std::to_string(err));
  check(waited_ms >= 150 && waited_ms < 1000, "sem_clockwait waited " + std::to_string(waited_ms) + " ms for 150");
  sem_post(&s);
  check(sem_clockwait(&s, CLOCK_MONOTONIC, &ts) == 0, "sem_clockwait on a posted semaphore (deadline past)");
  sem_destroy(&s);
}

void signal_names() {
  check(std::string(sigabbrev_np(11)) == "SEGV" && std::string(sigabbrev_np(29)) == "POLL" &&
            std::string(sigabbrev_np(31)) == "SYS",
        "sigabbrev_np");
  check(sigabbrev_np(0) == nullptr && sigabbrev_np(32) == nullptr && sigabbrev_np(-1) == nullptr,
        "sigabbrev_np outside 1..31");
}

}  // namespace

int main() {
  exceptions();
  random_numbers();
  semaphores();
  signal_names();
  std::printf(g_failures ? "%d failure(s)\n" : "PASS\n", g_failures);
  return g_failures ? 1 : 0;
}
