// DumpSignalGuard (shim/base/signal_guard.h): the signals a dump can raise
// by itself never reach the program; the program's own are left alone.
// Each case runs in a forked child (signal state and rlimits are per process).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "shim/base/signal_guard.h"
#include "tests/unit/unit_process.h"

using namespace gpumemrec;

namespace {

// Runs fn in a child with default dispositions; returns its wait status.
template <class Fn>
int in_child(Fn fn) {
  return unit_process::in_child([&] {
    signal(SIGXFSZ, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    return fn();
  });
}

int pending(int sig) {
  sigset_t s;
  sigpending(&s);
  return sigismember(&s, sig);
}

}  // namespace

TEST(SignalGuard, WritePastRlimitFsizeDoesNotKill) {
  const int status = in_child([] {
    char path[] = "/tmp/gpumemrec-guard-XXXXXX";
    const int fd = mkstemp(path);
    unlink(path);
    struct rlimit rl = {1024, 1024};
    setrlimit(RLIMIT_FSIZE, &rl);
    static char buf[4096];
    int err = 0;
    {
      DumpSignalGuard g;
      if (write(fd, buf, sizeof buf) < 0) err = errno;  // partial write: 1024
      if (write(fd, buf, sizeof buf) < 0) err = errno;  // at the limit: EFBIG + SIGXFSZ
    }
    if (err != EFBIG) return 10;
    if (pending(SIGXFSZ)) return 11;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SignalGuard, WriteToAClosedPipeDoesNotKill) {
  const int status = in_child([] {
    int p[2];
    if (pipe(p) != 0) return 9;
    close(p[0]);
    int err = 0;
    {
      DumpSignalGuard g;
      if (write(p[1], "x", 1) < 0) err = errno;
    }
    if (err != EPIPE) return 10;
    return pending(SIGPIPE) ? 11 : 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A SIGPIPE the program blocked and has pending before the dump is its own:
// still pending afterwards. One sent by another process during the dump is
// delivered after it (re-queued), not swallowed.
TEST(SignalGuard, TheProgramsOwnSignalsSurvive) {
  const int status = in_child([] {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    sigprocmask(SIG_BLOCK, &s, nullptr);
    raise(SIGPIPE);
    { DumpSignalGuard g; }
    if (!pending(SIGPIPE)) return 10;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);

  const int status2 = in_child([] {
    signal(SIGXFSZ, SIG_IGN);  // observe pending state without dying
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGXFSZ);
    sigprocmask(SIG_BLOCK, &s, nullptr);  // the program blocks it: we can look at what is pending
    const pid_t parent = getpid();
    {
      DumpSignalGuard g;
      const pid_t helper = fork();
      if (helper == 0) {
        kill(parent, SIGXFSZ);  // from another process
        _exit(0);
      }
      waitpid(helper, nullptr, 0);
    }
    return pending(SIGXFSZ) ? 0 : 10;
  });
  ASSERT_TRUE(WIFEXITED(status2)) << "killed by signal " << WTERMSIG(status2);
  EXPECT_EQ(WEXITSTATUS(status2), 0);
}

TEST(SignalGuard, RestoresTheMask) {
  sigset_t before, after;
  pthread_sigmask(SIG_SETMASK, nullptr, &before);
  { DumpSignalGuard g; }
  pthread_sigmask(SIG_SETMASK, nullptr, &after);
  EXPECT_EQ(sigismember(&before, SIGXFSZ), sigismember(&after, SIGXFSZ));
  EXPECT_EQ(sigismember(&before, SIGPIPE), sigismember(&after, SIGPIPE));
}
