// The writer thread (shim/dump/writer_thread.cpp): one thread, jobs run in
// the order posted, every signal blocked in it, wake-ups that reach a job
// waiting for its verdict, and the idle hook once per quiet spell.
#include "shim/dump/writer_thread.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "shim/base/clock.h"

using namespace gpumemrec;

namespace {

// Generous: the machine may be loaded; nothing here waits this long when
// the code is right.
constexpr unsigned kLongMs = 20000;

std::mutex g_mu;
std::vector<int> g_order;
std::atomic<long> g_job_tid{0};

void record_job(int arg) {
  std::lock_guard<std::mutex> g(g_mu);
  g_order.push_back(arg);
  g_job_tid.store(long(syscall(SYS_gettid)));
}

// Waits until `flag` is set (a job reached a point), at most kLongMs.
bool wait_flag(const std::atomic<bool>& flag) {
  for (unsigned i = 0; i < kLongMs && !flag.load(); ++i) usleep(1000);
  return flag.load();
}

}  // namespace

TEST(WriterThread, RunsJobsInOrderOnItsOwnThread) {
  ASSERT_TRUE(writer_start());
  ASSERT_TRUE(writer_start());  // idempotent
  ASSERT_TRUE(writer_wait_idle(kLongMs));
  g_order.clear();
  for (int i = 0; i < kWriterQueue; ++i) writer_post(record_job, i);
  ASSERT_TRUE(writer_wait_idle(kLongMs));
  EXPECT_EQ(writer_jobs(), 0);
  EXPECT_FALSE(writer_busy());
  std::vector<int> expect;
  for (int i = 0; i < kWriterQueue; ++i) expect.push_back(i);
  EXPECT_EQ(g_order, expect);
  EXPECT_NE(writer_tid(), 0);
  EXPECT_EQ(g_job_tid.load(), writer_tid());
  EXPECT_NE(writer_tid(), long(syscall(SYS_gettid)));
  EXPECT_FALSE(writer_is_this_thread());
}

namespace {
std::atomic<bool> g_probe_done{false};
std::atomic<bool> g_all_blocked{false};
std::atomic<bool> g_on_writer{false};
char g_name[32];
void probe_job(int) {
  sigset_t set;
  pthread_sigmask(SIG_BLOCK, nullptr, &set);
  bool all = true;
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGHUP, SIGCHLD, SIGPIPE, SIGXFSZ})
    all = all && sigismember(&set, sig);
  g_all_blocked.store(all);
  g_on_writer.store(writer_is_this_thread());
  pthread_getname_np(pthread_self(), g_name, sizeof g_name);
  EXPECT_FALSE(writer_wait_idle(1));  // never waits for itself
  g_probe_done.store(true);
}
}  // namespace

TEST(WriterThread, BlocksEverySignalAndIsNamed) {
  ASSERT_TRUE(writer_start());
  writer_post(probe_job, 0);
  ASSERT_TRUE(wait_flag(g_probe_done));
  ASSERT_TRUE(writer_wait_idle(kLongMs));
  EXPECT_TRUE(g_all_blocked.load());  // the program's signals go to its own threads
  EXPECT_TRUE(g_on_writer.load());
  EXPECT_STREQ(g_name, "gpumemrec-write");
}

namespace {
std::atomic<bool> g_waiting{false};
std::atomic<int> g_woken{-1};
void waiting_job(int) {
  g_waiting.store(true);
  g_woken.store(writer_wait(0) ? 1 : 0);  // no deadline: only a wake-up ends it
}
std::atomic<int> g_timed{-1};
std::atomic<uint64_t> g_late_ns{0};
void deadline_job(int ms) {
  const uint64_t deadline = monotonic_ns() + uint64_t(ms) * 1000000ull;
  g_timed.store(writer_wait(deadline) ? 1 : 0);
  g_late_ns.store(monotonic_ns() >= deadline ? 1 : 0);
}
}  // namespace

TEST(WriterThread, WakeReachesAWaitingJob) {
  ASSERT_TRUE(writer_start());
  ASSERT_TRUE(writer_wait_idle(kLongMs));
  writer_post(waiting_job, 0);
  ASSERT_TRUE(wait_flag(g_waiting));
  EXPECT_TRUE(writer_busy());
  // From a signal handler it must work too: writer_wake is sem_post.
  writer_wake();
  ASSERT_TRUE(writer_wait_idle(kLongMs));
  EXPECT_EQ(g_woken.load(), 1);
}

TEST(WriterThread, WaitWithADeadlineTimesOutAfterIt) {
  ASSERT_TRUE(writer_start());
  ASSERT_TRUE(writer_wait_idle(kLongMs));
  writer_post(deadline_job, 30);
  ASSERT_TRUE(writer_wait_idle(kLongMs));
  EXPECT_EQ(g_timed.load(), 0);
  EXPECT_EQ(g_late_ns.load(), 1u);  // not before the deadline
}

namespace {
std::atomic<int> g_idle_calls{0};
void idle_hook() { g_idle_calls.fetch_add(1); }
}  // namespace

TEST(WriterThread, IdleHookRunsOncePerQuietSpell) {
  ASSERT_TRUE(writer_start());
  ASSERT_TRUE(writer_wait_idle(kLongMs));
  writer_set_idle_hook(idle_hook, 20);
  writer_post(record_job, 100);  // the writer re-reads the hook after a job
  for (unsigned i = 0; i < kLongMs && g_idle_calls.load() == 0; ++i) usleep(1000);
  ASSERT_EQ(g_idle_calls.load(), 1);
  usleep(200 * 1000);  // ten idle periods more: still once (no job came)
  EXPECT_EQ(g_idle_calls.load(), 1);
  writer_post(record_job, 101);  // a new spell after a job
  for (unsigned i = 0; i < kLongMs && g_idle_calls.load() == 1; ++i) usleep(1000);
  EXPECT_EQ(g_idle_calls.load(), 2);
  writer_set_idle_hook(nullptr, 0);
}

TEST(WriterThread, ThreadsPostingAtOnceEachJobRunsOnce) {
  ASSERT_TRUE(writer_start());
  ASSERT_TRUE(writer_wait_idle(kLongMs));
  g_order.clear();
  // The callers never have more than kWriterQueue jobs waiting.
  std::vector<std::thread> ts;
  for (int t = 0; t < kWriterQueue; ++t) ts.emplace_back([t] { writer_post(record_job, t); });
  for (auto& t : ts) t.join();
  ASSERT_TRUE(writer_wait_idle(kLongMs));
  std::vector<int> got = g_order;
  std::sort(got.begin(), got.end());
  std::vector<int> expect;
  for (int i = 0; i < kWriterQueue; ++i) expect.push_back(i);
  EXPECT_EQ(got, expect);
}
