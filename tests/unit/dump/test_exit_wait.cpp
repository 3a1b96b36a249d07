// The exit wait (shim/dump/exit_wait.h): it follows the writer's progress,
// gives up when there is none or at the cap, says so in one line and leaves
// no temporary directory of this process behind.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

#include "shim/base/clock.h"
#include "shim/base/dump_progress.h"
#include "shim/dump/exit_wait.h"
#include "shim/dump/place/bundle_name.h"

using namespace gpumemrec;

namespace {

std::atomic<bool> g_done{false};
bool done() { return g_done.load(); }

std::string make_dump_dir() {
  char tmpl[] = "/tmp/gpumemrec-unit-exitwait-XXXXXX";
  return mkdtemp(tmpl);
}

// A temporary bundle directory named as this process's (bundle_dir.h), with
// a file in it.
std::string make_own_tmp(const std::string& dir) {
  const std::string tmp = dir + "/.tmp-oom_dump_20261125T130000Z_" + std::to_string(getpid()) + "_cuda_1_host_abc";
  EXPECT_EQ(mkdir(tmp.c_str(), 0700), 0);
  FILE* f = fopen((tmp + "/events.json").c_str(), "w");
  if (f) fclose(f);
  return tmp;
}

bool exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

struct ExitWait : ::testing::Test {
  std::string dir = make_dump_dir();
  void SetUp() override {
    g_done = false;
    exit_wait_atfork_child();  // forgets an earlier give-up
  }
  void TearDown() override {
    exit_wait_atfork_child();
    exit_wait_init(60, nullptr);
    rmdir(dir.c_str());
  }
};

}  // namespace

TEST_F(ExitWait, DoneAlreadyReturnsAtOnce) {
  exit_wait_init(0, dir.c_str());
  g_done = true;
  EXPECT_EQ(exit_wait(done, "at exit"), ExitWaitEnd::kDone);
}

TEST_F(ExitWait, ZeroMeansDoNotWaitAndSaysWhatWasLost) {
  exit_wait_init(0, dir.c_str());
  const std::string tmp = make_own_tmp(dir);
  testing::internal::CaptureStderr();
  EXPECT_EQ(exit_wait(done, "at exit"), ExitWaitEnd::kLimit);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("gave up waiting at exit"), std::string::npos) << err;
  EXPECT_NE(err.find("GPUMEMREC_EXIT_WAIT_S=0"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(exists(tmp));
  // Given up once: the next wait of the same ending does not wait again.
  testing::internal::CaptureStderr();
  EXPECT_EQ(exit_wait(done, "at exit"), ExitWaitEnd::kGaveUpBefore);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST_F(ExitWait, NoProgressGivesUpAfterTheStall) {
  exit_wait_init(60, dir.c_str(), 200);
  const std::string tmp = make_own_tmp(dir);
  const uint64_t t0 = monotonic_ns();
  testing::internal::CaptureStderr();
  EXPECT_EQ(exit_wait(done, "at a fatal signal"), ExitWaitEnd::kStalled);
  const std::string err = testing::internal::GetCapturedStderr();
  const uint64_t ms = (monotonic_ns() - t0) / 1000000;
  EXPECT_GE(ms, 200u);
  EXPECT_LT(ms, 30000u);  // far from the 60 s cap: only a hang reaches it
  EXPECT_NE(err.find("no progress for 200 ms"), std::string::npos) << err;
  EXPECT_FALSE(exists(tmp));
}

TEST_F(ExitWait, ProgressKeepsItWaitingPastTheStall) {
  // The writer steps for ten stall windows, then finishes: the wait lasts
  // that long and ends done. The stall window (2 s) is far above the step
  // interval (1 ms): a thread unscheduled that long is a hang, not load.
  exit_wait_init(60, dir.c_str(), 2000);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    const uint64_t until = monotonic_ns() + 2500ull * 1000000ull;  // > one stall window
    while (monotonic_ns() < until && !stop) {
      dump_progress_step();
      usleep(1000);
    }
    g_done = true;
  });
  const uint64_t t0 = monotonic_ns();
  EXPECT_EQ(exit_wait(done, "at exit"), ExitWaitEnd::kDone);
  EXPECT_GE((monotonic_ns() - t0) / 1000000, 2000u);
  stop = true;
  writer.join();
}

TEST_F(ExitWait, TheCapEndsAWriterThatKeepsGoing) {
  exit_wait_init(1, dir.c_str(), 60000);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    while (!stop) {
      dump_progress_step();
      usleep(1000);
    }
  });
  testing::internal::CaptureStderr();
  EXPECT_EQ(exit_wait(done, "at _exit"), ExitWaitEnd::kLimit);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("GPUMEMREC_EXIT_WAIT_S=1"), std::string::npos) << err;
  stop = true;
  writer.join();
}

namespace {
// Whether a new bundle directory can still be made in dir (and removes it).
bool can_claim(const std::string& dir) {
  const int dirfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  std::string name;
  char tmp[256];
  const int err = claim_bundle_name(dirfd, 1, Backend::kCuda, 1, &name, tmp, sizeof tmp);
  if (err == 0) unlinkat(dirfd, tmp, AT_REMOVEDIR);
  close(dirfd);
  return err == 0;
}
}  // namespace

// Giving up when the process surely ends shuts the gate for new bundle
// directories; at a fatal signal the program handles itself (it may carry
// on: a SIGTERM handler that saves a checkpoint) later bundles still come.
TEST_F(ExitWait, OnlyACertainEndStopsLaterBundles) {
  exit_wait_init(0, dir.c_str());
  testing::internal::CaptureStderr();
  EXPECT_EQ(exit_wait(done, "at a fatal signal", false), ExitWaitEnd::kLimit);
  testing::internal::GetCapturedStderr();
  EXPECT_TRUE(can_claim(dir));
  exit_wait_atfork_child();
  testing::internal::CaptureStderr();
  EXPECT_EQ(exit_wait(done, "at exit"), ExitWaitEnd::kLimit);
  testing::internal::GetCapturedStderr();
  EXPECT_FALSE(can_claim(dir));
  exit_wait_atfork_child();  // reopens it
  EXPECT_TRUE(can_claim(dir));
}
