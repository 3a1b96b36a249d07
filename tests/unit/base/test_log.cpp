// The shim's messages (shim/base/log.cpp): "gpumemrec: <level>: " lines on
// file descriptor 2, the level filter, errno untouched, and no harm when
// stderr is closed or a pipe nobody reads. In children, with fd 2 a pipe.
#include "shim/base/log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "shim/base/fd_io.h"
#include "tests/unit/unit_process.h"

using namespace gpumemrec;

namespace {

// What the child wrote on fd 2 while `fn` ran (fd 2 is a pipe in the child).
template <class Fn>
std::string stderr_of_child(Fn fn, int* status) {
  int p[2];
  if (pipe(p) != 0) return "<no pipe>";
  *status = unit_process::in_child([&] {
    close(p[0]);
    dup2(p[1], 2);
    return fn();
  });
  close(p[1]);
  std::string out;
  fd_read_all(p[0], 1 << 16, &out);
  close(p[0]);
  return out;
}

}  // namespace

TEST(Log, LinesArePrefixedAndFilteredByLevel) {
  int status = 0;
  // The test program's logger was made at start-up, at the level of
  // GPUMEMREC_LOG_LEVEL (error under ctest); a fresh one keeps that level.
  const std::string out = stderr_of_child(
      [] {
        if (!log_get()) return 9;
        log_get()->set_level(spdlog::level::warn);
        GM_INFO("not shown {}", 1);
        GM_WARN("cudaMalloc failed {}", 42);
        GM_ERROR("and {}", "this");
        return 0;
      },
      &status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(out, "gpumemrec: warning: cudaMalloc failed 42\ngpumemrec: error: and this\n");
}

TEST(Log, ErrnoIsKeptAndAClosedStderrIsHarmless) {
  int status = 0;
  stderr_of_child(
      [] {
        log_get()->set_level(spdlog::level::warn);
        errno = 77;
        GM_WARN("one {}", 1);
        if (errno != 77) return 1;
        close(2);  // EBADF from now on
        errno = 78;
        GM_WARN("lost {}", 2);
        return errno == 78 ? 0 : 2;
      },
      &status);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A pipe whose reader is gone, SIGPIPE ignored (as a program that writes to
// pipes has it): every line fails with EPIPE, the program carries on and
// sees its own errno.
TEST(Log, ReaderGoneIsNotAnError) {
  const int status = unit_process::in_child([&] {
    int p[2];  // made in the child: no end of it stays open in the parent
    if (pipe(p) != 0) return 2;
    signal(SIGPIPE, SIG_IGN);
    close(p[0]);
    dup2(p[1], 2);
    log_get()->set_level(spdlog::level::warn);
    errno = 5;
    for (int i = 0; i < 100; ++i) GM_WARN("into nothing {}", i);
    return errno == 5 ? 0 : 1;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(Log, ResetAfterForkKeepsTheLevel) {
  int status = 0;
  const std::string out = stderr_of_child(
      [] {
        log_get()->set_level(spdlog::level::err);
        log_reset_after_fork();
        GM_WARN("filtered {}", 1);
        GM_ERROR("kept {}", 2);
        return log_get()->level() == spdlog::level::err ? 0 : 1;
      },
      &status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(out, "gpumemrec: error: kept 2\n");
}

namespace {

// Fills pipe `p` to the last byte (its write end made non-blocking for the
// filling only: the test owns both ends).
void fill_pipe(const int p[2]) {
  const int flags = fcntl(p[1], F_GETFL);
  fcntl(p[1], F_SETFL, flags | O_NONBLOCK);
  char block[4096] = {};
  while (write(p[1], block, sizeof block) > 0) {
  }
  while (write(p[1], block, 1) > 0) {
  }
  fcntl(p[1], F_SETFL, flags);
}

}  // namespace

// A parent that reads only the program's stdout leaves stderr full: a line
// of ours must not block the calling thread (it may be inside cudaMalloc),
// and the next line that gets through says how many were lost. A blocking
// write would hang this child, and the test with it (ctest's timeout).
TEST(Log, AFullStderrDropsLinesWithoutBlockingAndSaysSoLater) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const int status = unit_process::in_child([&] {
    dup2(p[1], 2);
    log_get()->set_level(spdlog::level::warn);
    fill_pipe(p);
    const uint64_t before = log_lines_dropped();
    GM_WARN("lost {}", 1);
    GM_WARN("lost {}", 2);
    if (log_lines_dropped() != before + 2) return 1;
    // The reader catches up: drain, then one line gets through with the count.
    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
    char sink[4096];
    while (read(p[0], sink, sizeof sink) > 0) {
    }
    GM_WARN("back {}", 3);
    if (log_lines_dropped() != 0) return 2;
    std::string out;
    fd_read_all(p[0], 1 << 16, &out);  // non-blocking: what is there
    const std::string want = "gpumemrec: warning: " + std::to_string(before + 2) +
                             " earlier line(s) dropped: stderr was full (nobody was reading it)\n"
                             "gpumemrec: warning: back 3\n";
    return out == want ? 0 : 3;
  });
  close(p[0]);
  close(p[1]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// A C program keeps SIGPIPE at its default action (terminate). Its stderr
// is a pipe whose reader went away (`prog 2>&1 | head -1` after head
// exited): our lines must not kill it, leave nothing pending, and keep its
// signal mask as it was.
TEST(Log, ReaderGoneWithSigpipeAtItsDefaultKillsNothing) {
  const int status = unit_process::in_child([&] {
    // Made in the child: the parent holds no end of it, so its reader is
    // really gone once the child closes it.
    int p[2];
    if (pipe(p) != 0) return 4;
    signal(SIGPIPE, SIG_DFL);
    close(p[0]);
    dup2(p[1], 2);
    log_get()->set_level(spdlog::level::warn);
    sigset_t mask_before, mask_after, pending;
    pthread_sigmask(SIG_SETMASK, nullptr, &mask_before);
    for (int i = 0; i < 100; ++i) GM_WARN("into nothing {}", i);
    // The write path itself, past the poll (a reader gone after it): the
    // EPIPE's SIGPIPE is taken back.
    write_lines_guarded(p[1], "a\n", "x\n", 2);
    pthread_sigmask(SIG_SETMASK, nullptr, &mask_after);
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE)) return 2;
    return sigismember(&mask_after, SIGPIPE) == sigismember(&mask_before, SIGPIPE) ? 0 : 3;
  });
  EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
