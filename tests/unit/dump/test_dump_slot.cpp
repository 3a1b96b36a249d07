// The dump slot (shim/dump/dump_slot.cpp): one holder at a time among
// racing threads, never re-entered, on-demand requests ahead of failures,
// bounded waits, and the temporary directory the exit path must remove.
#include "shim/dump/dump_slot.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/unit/unit_process.h"

using namespace gpumemrec;

namespace {

constexpr int kLongMs = 20000;  // generous: nothing waits this long when the code is right

// Another thread holds the slot (for a failure) until let_go() or the end
// of the scope.
class OtherHolder {
 public:
  OtherHolder()
      : thread_([this] {
          if (dump_slot_try_acquire(DumpReason::kOom)) held_.store(true);
          else failed_.store(true);
          while (!let_go_.load()) usleep(1000);
          if (held_.load()) dump_slot_release();
        }) {
    while (!held_.load() && !failed_.load()) usleep(1000);
  }
  ~OtherHolder() {
    let_go();
    thread_.join();
  }
  bool holds() const { return held_.load(); }
  void let_go() { let_go_.store(true); }

 private:
  std::atomic<bool> held_{false}, failed_{false}, let_go_{false};
  std::thread thread_;
};

}  // namespace

TEST(DumpSlot, OneHolderAmongRacingThreads) {
  ASSERT_FALSE(dump_slot_busy());
  constexpr int kThreads = 8, kRounds = 2000;
  std::atomic<int> inside{0}, overlaps{0}, wins{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        if (!dump_slot_try_acquire(t % 2 ? DumpReason::kOom : DumpReason::kSignal)) {
          if (!dump_slot_last_try_was_busy()) overlaps.fetch_add(1000);  // must say why it failed
          continue;
        }
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        if (!dump_slot_held_by_this_thread()) overlaps.fetch_add(1);
        wins.fetch_add(1);
        inside.fetch_sub(1);
        dump_slot_release();
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(wins.load(), 0);
  EXPECT_FALSE(dump_slot_busy());
}

TEST(DumpSlot, NeverReenteredAndAHolderDoesNotWaitForItself) {
  ASSERT_TRUE(dump_slot_try_acquire(DumpReason::kSignal));
  EXPECT_FALSE(dump_slot_last_try_was_busy());
  EXPECT_TRUE(dump_slot_busy());
  EXPECT_FALSE(dump_slot_holder_is_failure());
  EXPECT_FALSE(dump_slot_try_acquire(DumpReason::kExit));  // e.g. exit() from a handler during the dump
  EXPECT_TRUE(dump_slot_last_try_was_busy());
  EXPECT_FALSE(dump_slot_wait_free(-1, false));  // at once: it could never become free
  dump_slot_release();
  EXPECT_FALSE(dump_slot_busy());
  EXPECT_FALSE(dump_slot_held_by_this_thread());
}

TEST(DumpSlot, FailureHolderIsKnownAsOne) {
  for (DumpReason r : {DumpReason::kOom, DumpReason::kLimit, DumpReason::kFailAfter}) {
    ASSERT_TRUE(dump_slot_try_acquire(r));
    EXPECT_TRUE(dump_slot_holder_is_failure());
    dump_slot_release();
  }
  EXPECT_FALSE(dump_slot_holder_is_failure());
}

TEST(DumpSlot, OnDemandRequestGoesBeforeFailures) {
  dump_slot_want(true);
  EXPECT_FALSE(dump_slot_try_acquire(DumpReason::kOom));
  EXPECT_TRUE(dump_slot_last_try_was_busy());
  EXPECT_FALSE(dump_slot_try_acquire(DumpReason::kLimit));
  EXPECT_FALSE(dump_slot_wait_free(5, true));  // free, but a request waits
  EXPECT_TRUE(dump_slot_wait_free(0, false));
  ASSERT_TRUE(dump_slot_try_acquire(DumpReason::kSignal));
  dump_slot_release();
  dump_slot_want(false);
  EXPECT_TRUE(dump_slot_try_acquire(DumpReason::kOom));
  dump_slot_release();
}

TEST(DumpSlot, WaitFreeIsBoundedAndEndsAtTheRelease) {
  {
    OtherHolder other;
    ASSERT_TRUE(other.holds());
    EXPECT_FALSE(dump_slot_held_by_this_thread());
    EXPECT_FALSE(dump_slot_wait_free(20, false));  // held all along: false after the bound
    EXPECT_FALSE(dump_slot_try_acquire(DumpReason::kSignal));
    other.let_go();
    EXPECT_TRUE(dump_slot_wait_free(kLongMs, false));
  }
  EXPECT_TRUE(dump_slot_try_acquire(DumpReason::kSignal));
  dump_slot_release();
}

TEST(DumpSlot, TemporaryDirectoryUntilTheRelease) {
  int fd = -1;
  char name[64];
  EXPECT_FALSE(dump_slot_tmp(&fd, name, sizeof name));
  ASSERT_TRUE(dump_slot_try_acquire(DumpReason::kOom));
  dump_slot_note_tmp(7, ".tmp-oom_dump_20261125T000000Z_pid1_cuda_1");
  ASSERT_TRUE(dump_slot_tmp(&fd, name, sizeof name));
  EXPECT_EQ(fd, 7);
  EXPECT_STREQ(name, ".tmp-oom_dump_20261125T000000Z_pid1_cuda_1");
  char small[6];
  ASSERT_TRUE(dump_slot_tmp(&fd, small, sizeof small));  // cut, always terminated
  EXPECT_STREQ(small, ".tmp-");
  EXPECT_FALSE(dump_slot_tmp(&fd, small, 0));
  dump_slot_release();
  EXPECT_FALSE(dump_slot_tmp(&fd, name, sizeof name));
}

// A fork while another thread holds the slot: the holder is not in the
// child, whose slot is free again.
TEST(DumpSlot, ForkedChildStartsFree) {
  OtherHolder other;
  ASSERT_TRUE(other.holds());
  dump_slot_want(true);
  const int status = unit_process::in_child([] {
    dump_slot_reset_after_fork();
    return !dump_slot_busy() && dump_slot_try_acquire(DumpReason::kOom) ? 0 : 1;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  dump_slot_want(false);
}
