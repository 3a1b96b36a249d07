// A bundle being written survives the program's fatal signal
// (shim/dump/crash_wait.cpp): the handler waits for the writer, then the
// signal does exactly what it would have done (the default action, the
// program's own handler, or nothing when ignored); disarming puts back only
// our own handlers. Every case runs in a child, which the signal may end.
#include "shim/dump/crash_wait.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "shim/base/fd_io.h"
#include "tests/unit/unit_process.h"

using namespace gpumemrec;

namespace {

std::atomic<bool> g_writer_done{false};
bool writer_idle() { return g_writer_done.load(); }

// In the child: a "writer" that finishes only once the fatal signal has
// been seen, then says so on `fd`: the process can only end after it.
void start_writer_that_waits_for_the_signal(int fd) {
  std::thread([fd] {
    while (crash_wait_signal() == 0) usleep(1000);
    const std::string line = "finished after signal " + std::to_string(crash_wait_signal()) + "\n";
    fd_write_all(fd, line.data(), line.size());
    g_writer_done.store(true);
  }).detach();
}

// Runs `fn` in a child with a pipe for the writer's line; returns the wait
// status and what came through the pipe.
template <class Fn>
int child_with_pipe(Fn fn, std::string* said) {
  int p[2];
  if (pipe(p) != 0) return -1;
  const int status = unit_process::in_child([&] {
    close(p[0]);
    return fn(p[1]);
  });
  close(p[1]);
  fd_read_all(p[0], 4096, said);
  close(p[0]);
  return status;
}

bool same_handler(const struct sigaction& a, const struct sigaction& b) {
  return (a.sa_flags & SA_SIGINFO) == (b.sa_flags & SA_SIGINFO) &&
         ((a.sa_flags & SA_SIGINFO) ? a.sa_sigaction == b.sa_sigaction : a.sa_handler == b.sa_handler);
}

void programs_handler(int) { _exit(3); }

}  // namespace

TEST(CrashWait, SentSignalWaitsForTheWriterThenKills) {
  std::string said;
  const int status = child_with_pipe(
      [](int fd) {
        signal(SIGTERM, SIG_DFL);
        crash_wait_arm(writer_idle);
        start_writer_that_waits_for_the_signal(fd);
        raise(SIGTERM);
        return 0;  // not reached: SIGTERM's default action
      },
      &said);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(said, "finished after signal " + std::to_string(SIGTERM) + "\n");
}

TEST(CrashWait, FaultWaitsForTheWriterThenFaultsAgain) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizer's own SIGSEGV handler reports the fault";
#endif
  std::string said;
  const int status = child_with_pipe(
      [](int fd) {
        signal(SIGSEGV, SIG_DFL);
        crash_wait_arm(writer_idle);
        start_writer_that_waits_for_the_signal(fd);
        volatile uintptr_t unmapped = 16;
        *reinterpret_cast<volatile int*>(unmapped) = 1;  // si_code SEGV_MAPERR > 0
        return 0;
      },
      &said);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_EQ(said, "finished after signal " + std::to_string(SIGSEGV) + "\n");
}

TEST(CrashWait, ProgramsOwnHandlerStillRuns) {
  std::string said;
  const int status = child_with_pipe(
      [](int fd) {
        signal(SIGTERM, programs_handler);  // e.g. a framework's graceful shutdown
        crash_wait_arm(writer_idle);
        start_writer_that_waits_for_the_signal(fd);
        raise(SIGTERM);
        return 0;
      },
      &said);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_EQ(said, "finished after signal " + std::to_string(SIGTERM) + "\n");  // after the wait
}

TEST(CrashWait, IgnoredSignalStaysIgnored) {
  const int status = unit_process::in_child([] {
    signal(SIGTERM, SIG_IGN);
    g_writer_done.store(true);
    crash_wait_arm(writer_idle);
    raise(SIGTERM);
    struct sigaction now;
    sigaction(SIGTERM, nullptr, &now);
    return now.sa_handler == SIG_IGN && crash_wait_signal() == 0 ? 0 : 1;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(CrashWait, DisarmPutsBackOnlyOurOwn) {
  const int status = unit_process::in_child([] {
    struct sigaction before_abrt, before_term, now;
    sigaction(SIGABRT, nullptr, &before_abrt);
    signal(SIGTERM, SIG_DFL);
    sigaction(SIGTERM, nullptr, &before_term);
    crash_wait_arm(writer_idle);
    sigaction(SIGABRT, nullptr, &now);
    if (same_handler(now, before_abrt)) return 1;  // ours is in place
    // keep(): a job was posted meanwhile, the handlers stay.
    crash_wait_disarm([] { return true; });
    sigaction(SIGABRT, nullptr, &now);
    if (same_handler(now, before_abrt)) return 2;
    // The program installs its own SIGTERM handler while we are armed.
    signal(SIGTERM, programs_handler);
    crash_wait_disarm();
    sigaction(SIGABRT, nullptr, &now);
    if (!same_handler(now, before_abrt)) return 3;  // ours went
    sigaction(SIGTERM, nullptr, &now);
    if (now.sa_handler != programs_handler) return 4;  // the program's stayed
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
