// The shim's messages (shim/base/log.cpp): "gpumemrec: <level>: " lines on
// file descriptor 2, the level filter, errno untouched, and no harm when
// stderr is closed or a pipe nobody reads. In children, with fd 2 a pipe.
#include "shim/base/log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
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
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const int status = unit_process::in_child([&] {
    signal(SIGPIPE, SIG_IGN);
    close(p[0]);
    dup2(p[1], 2);
    log_get()->set_level(spdlog::level::warn);
    errno = 5;
    for (int i = 0; i < 100; ++i) GM_WARN("into nothing {}", i);
    return errno == 5 ? 0 : 1;
  });
  close(p[0]);
  close(p[1]);
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
