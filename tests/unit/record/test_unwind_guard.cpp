// UnwindGuard (shim/record/unwind_guard.h): a forked child keeps libunwind
// only when no thread was inside it at the fork. The guard is exercised
// directly (a local instance, no libunwind): the marks, the fork handshake
// and what the child concludes. Each child allocates nothing (a child of a
// threaded fork under AddressSanitizer may find the allocator's lock held).
#include "shim/record/unwind_guard.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace gpumemrec {
namespace {

// The child's verdict: exit 0 = keeps libunwind, 1 = gives it up.
int fork_and_ask(UnwindGuard& g) {
  g.before_fork();
  const pid_t pid = fork();
  if (pid == 0) _exit(g.after_fork_child() ? 0 : 1);
  g.after_fork_parent();
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(UnwindGuard, ChildKeepsLibunwindWhenNoThreadIsInside) {
  UnwindGuard g;
  g.init(false);
  ASSERT_TRUE(g.enter());
  g.leave();
  EXPECT_EQ(fork_and_ask(g), 0);
}

TEST(UnwindGuard, ChildGivesItUpWhenAThreadIsInsideAtTheFork) {
  UnwindGuard g;
  g.init(false);
  std::atomic<int> state{0};  // 1: inside, 2: may leave
  std::thread inside([&] {
    if (!g.enter()) return;
    state.store(1);
    while (state.load() != 2) std::this_thread::yield();
    g.leave();
  });
  while (state.load() != 1) std::this_thread::yield();
  // The thread stays inside past the prepare handler's bounded wait.
  EXPECT_EQ(fork_and_ask(g), 1);
  state.store(2);
  inside.join();
  EXPECT_EQ(fork_and_ask(g), 0) << "the mark was cleared on leaving";
}

TEST(UnwindGuard, ACallDuringAForkIsSentToGlibc) {
  UnwindGuard g;
  g.init(false);
  g.before_fork();
  bool entered = true;
  std::thread([&] { entered = g.enter(); }).join();
  EXPECT_FALSE(entered) << "no call may start while a fork is under way";
  g.after_fork_parent();
  std::thread([&] {
    entered = g.enter();
    if (entered) g.leave();
  }).join();
  EXPECT_TRUE(entered);
}

TEST(UnwindGuard, LibunwindSharedWithTheProgramMeansGlibcInChildren) {
  UnwindGuard g;
  g.init(true);
  EXPECT_FALSE(g.on());
  EXPECT_TRUE(g.enter());  // the parent still unwinds with libunwind
  g.leave();
  EXPECT_EQ(fork_and_ask(g), 1);
}

// Threads past the first kMarks share lines, round robin, each line a
// count: one still inside must keep the child off libunwind while another
// thread of its line comes and goes (its leaves must not clear the holder's
// count).
TEST(UnwindGuard, ThreadsSharingALineCountEachOtherIn) {
  UnwindGuard g;
  g.init(false);
  for (unsigned i = 0; i < UnwindGuard::kMarks; ++i)
    std::thread([&] {
      if (g.enter()) g.leave();
    }).join();
  std::atomic<int> state{0};
  std::thread holder([&] {  // thread kMarks + 1: the first line, shared
    if (!g.enter()) return;
    state.store(1);
    while (state.load() != 2) std::this_thread::yield();
    g.leave();
  });
  while (state.load() != 1) std::this_thread::yield();
  for (unsigned i = 0; i < UnwindGuard::kMarks; ++i)  // one of them shares the holder's line
    std::thread([&] {
      for (int k = 0; k < 100; ++k)
        if (g.enter()) g.leave();
    }).join();
  EXPECT_EQ(fork_and_ask(g), 1) << "the holder's count was lost to another thread of its line";
  state.store(2);
  holder.join();
  EXPECT_EQ(fork_and_ask(g), 0);
}

// Forks while threads go in and out as fast as they can: every child
// answers (none waits for ever), and the parent's threads never find a call
// refused once the forks are over.
TEST(UnwindGuard, ForksWhileThreadsUnwindNeverHang) {
  UnwindGuard g;
  g.init(false);
  std::atomic<bool> stop{false};
  std::vector<std::thread> th;
  for (int k = 0; k < 4; ++k)
    th.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed))
        if (g.enter()) g.leave();
    });
  int kept = 0, answered = 0;
  for (int round = 0; round < 100; ++round) {
    const int r = fork_and_ask(g);
    answered += r == 0 || r == 1;
    kept += r == 0;
  }
  stop.store(true);
  for (auto& t : th) t.join();
  EXPECT_EQ(answered, 100);
  std::thread([&] {
    const bool in = g.enter();
    EXPECT_TRUE(in);
    if (in) g.leave();
  }).join();
  RecordProperty("children_that_kept_libunwind", kept);
}

}  // namespace
}  // namespace gpumemrec
