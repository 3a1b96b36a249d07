// The shim's own threads (shim/base/background_thread.cpp): detached, named,
// every signal blocked in them and none in the caller. The loader guard
// (shim/base/loader_guard.cpp): a fork waits for our dlopen in flight, and
// only a bounded time.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "shim/base/background_thread.h"
#include "shim/base/clock.h"
#include "shim/base/loader_guard.h"

using namespace gpumemrec;

namespace {

std::atomic<bool> g_go{false}, g_done{false}, g_all_blocked{false};
char g_name[32];

void* probe_main(void*) {
  while (!g_go.load()) usleep(1000);  // the creator names us after the create
  sigset_t set;
  pthread_sigmask(SIG_BLOCK, nullptr, &set);
  bool all = true;
  // The standard signals (glibc keeps its own two below SIGRTMIN usable).
  for (int sig = 1; sig < 32; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP && sigismember(&set, sig) == 0) all = false;
  g_all_blocked.store(all);
  pthread_getname_np(pthread_self(), g_name, sizeof g_name);
  g_done.store(true);
  return nullptr;
}

}  // namespace

TEST(BackgroundThread, NamedWithEverySignalBlockedAndTheCallerUntouched) {
  sigset_t before, after;
  pthread_sigmask(SIG_BLOCK, nullptr, &before);
  ASSERT_TRUE(start_background_thread(probe_main, "gpumemrec-test"));
  pthread_sigmask(SIG_BLOCK, nullptr, &after);
  for (int sig = 1; sig < 32; ++sig) EXPECT_EQ(sigismember(&before, sig), sigismember(&after, sig)) << sig;
  g_go.store(true);
  for (int i = 0; i < 20000 && !g_done.load(); ++i) usleep(1000);
  ASSERT_TRUE(g_done.load());
  EXPECT_TRUE(g_all_blocked.load());
  EXPECT_STREQ(g_name, "gpumemrec-test");
}

TEST(LoaderGuard, ForkWaitsForADlopenInFlightButNotForEver) {
  int ready[2], go[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  setenv("GPUMEMREC_UNIT_CTOR_READY_FD", std::to_string(ready[1]).c_str(), 1);
  setenv("GPUMEMREC_UNIT_CTOR_GO_FD", std::to_string(go[0]).c_str(), 1);
  void* handle = nullptr;
  std::thread loader([&] { handle = guarded_dlopen(GPUMEMREC_UNIT_BLOCKING_LIB, RTLD_NOW | RTLD_LOCAL); });
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);  // the dlopen is in its library's constructor now
  const uint64_t t0 = monotonic_ns();
  loader_guard_before_fork();  // a library constructor may itself wait for the fork: bounded
  const uint64_t waited_ms = (monotonic_ns() - t0) / 1000000;
  EXPECT_GE(waited_ms, kForkWaitMs);
  ASSERT_EQ(write(go[1], "x", 1), 1);
  loader.join();
  EXPECT_NE(handle, nullptr) << dlerror();
  loader_guard_before_fork();  // nothing in flight: returns (no bound to wait for)
  unsetenv("GPUMEMREC_UNIT_CTOR_READY_FD");
  unsetenv("GPUMEMREC_UNIT_CTOR_GO_FD");
  for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
}
