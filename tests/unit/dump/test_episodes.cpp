// Out-of-memory episodes: one bundle per episode, and the failures that got
// no bundle counted in the next one (metadata failed_calls_before_dump).
#include <dirent.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "shim/base/clock.h"
#include "shim/dump/dumper.h"
#include "shim/dump/verdict/episodes.h"
#include "shim/record/recorder.h"

using namespace gpumemrec;

namespace {

FailureInfo failure(int device, uint64_t size, uint32_t tid, uint32_t stack = 0) {
  FailureInfo f;
  f.api = HookId::cudaMalloc;
  f.device = device;
  f.size = size;
  f.tid = tid;
  f.stack_id = stack;
  f.time_ns = 1000;
  return f;
}

constexpr uint64_t kWindow = 100;

}  // namespace

TEST(Episodes, FirstFailureOpensRetriesJoin) {
  Episodes e;
  PendingRequest t1{};
  const uint64_t id = e.on_failure(failure(0, 64, 1), 1000, 500, kWindow, &t1);
  EXPECT_NE(id, 0u);
  EXPECT_EQ(t1.episode, id);
  // PyTorch's retry chain: the same request fails twice more, same episode.
  EXPECT_EQ(e.on_failure(failure(0, 64, 1), 1010, 400, kWindow, &t1), 0u);
  EXPECT_EQ(e.on_failure(failure(0, 64, 1), 1020, 300, kWindow, &t1), 0u);
  EXPECT_EQ(e.take_unreported(), 2u);
  EXPECT_EQ(e.verdict(id).outcome, Outcome::kUnknown);
}

TEST(Episodes, RecoveredOnlyBySameDeviceAndCoveringSize) {
  Episodes e;
  PendingRequest t1{};
  const uint64_t id = e.on_failure(failure(0, 64, 1), 1000, 500, kWindow, &t1);
  EXPECT_FALSE(e.on_success(&t1, 1, HookId::cudaMalloc, 1, 64, 1010, 100));  // another device
  EXPECT_FALSE(e.on_success(&t1, 1, HookId::cudaMalloc, 0, 63, 1010, 100));  // smaller: not the retry
  EXPECT_EQ(e.verdict(id).outcome, Outcome::kUnknown);
  EXPECT_TRUE(e.on_success(&t1, 1, HookId::cuMemAlloc_v2, 0, 64, 1050, 200));
  const Verdict v = e.verdict(id);
  EXPECT_EQ(v.outcome, Outcome::kRecovered);
  EXPECT_EQ(v.recovery.after_ns, 50u);
  EXPECT_EQ(v.recovery.freed_bytes, 300u);  // 500 live at the failure, 200 just before the retry
  EXPECT_EQ(v.recovery.retry_size, 64u);
  EXPECT_EQ(v.recovery.retry_api, HookId::cuMemAlloc_v2);
  EXPECT_EQ(t1.episode, 0u);
}

TEST(Episodes, EveryFailingThreadMustRecover) {
  Episodes e;
  PendingRequest t1{}, t2{};
  const uint64_t id = e.on_failure(failure(0, 64, 1), 1000, 500, kWindow, &t1);
  EXPECT_EQ(e.on_failure(failure(0, 32, 2), 1001, 500, kWindow, &t2), 0u);
  EXPECT_FALSE(e.on_success(&t1, 1, HookId::cudaMalloc, 0, 64, 1010, 100));
  EXPECT_EQ(e.verdict(id).outcome, Outcome::kUnknown);
  // Thread 2 never retries: fatal once the window has passed since the last failure.
  EXPECT_FALSE(e.expire(1001 + kWindow - 1, kWindow, false, FatalCause::kNoRetry));
  EXPECT_TRUE(e.expire(1001 + kWindow, kWindow, false, FatalCause::kNoRetry));
  EXPECT_EQ(e.verdict(id).outcome, Outcome::kFatal);
  EXPECT_EQ(e.verdict(id).cause, FatalCause::kNoRetry);
  // Its late success is about a decided episode: forgotten.
  EXPECT_FALSE(e.on_success(&t2, 2, HookId::cudaMalloc, 0, 32, 5000, 0));
  EXPECT_EQ(t2.episode, 0u);
}

TEST(Episodes, AFailureAfterTheWindowDecidesTheOldEpisodeFirst) {
  Episodes e;
  PendingRequest t1{};
  const uint64_t a = e.on_failure(failure(0, 64, 1), 1000, 0, kWindow, &t1);
  const uint64_t b = e.on_failure(failure(0, 64, 1), 1000 + kWindow, 0, kWindow, &t1);
  EXPECT_NE(b, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(e.verdict(a).outcome, Outcome::kFatal);
  EXPECT_EQ(t1.episode, b);  // its pending request is the new one
}

TEST(Episodes, TimestampsFromOtherThreadsOutOfOrderAreTheSameEpisode) {
  Episodes e;
  PendingRequest t1{}, t2{};
  e.on_failure(failure(0, 64, 1), 5000, 0, kWindow, &t1);
  // Taken by another thread just before the episode's start was stored: an
  // unsigned difference would wrap and decide the episode.
  EXPECT_EQ(e.on_failure(failure(0, 64, 2), 4990, 0, kWindow, &t2), 0u);
  EXPECT_FALSE(e.expire(4990, kWindow, false, FatalCause::kNoRetry));
}

TEST(Episodes, ExitAndSignalsDecideAtOnce) {
  Episodes e;
  PendingRequest t1{};
  const uint64_t a = e.on_failure(failure(0, 64, 1), 1000, 0, kWindow, &t1);
  EXPECT_TRUE(e.expire(1001, kWindow, true, FatalCause::kSignal, 6));
  EXPECT_EQ(e.verdict(a).cause, FatalCause::kSignal);
  EXPECT_EQ(e.verdict(a).signal, 6);
  EXPECT_FALSE(e.expire(1002, kWindow, true, FatalCause::kExit));  // nothing open
}

TEST(Episodes, RecoveredEpisodesAreCountedAndTheNewestListed) {
  Episodes e;
  PendingRequest t1{};
  const int n = int(Episodes::kListed) + 8;
  for (int i = 0; i < n; ++i) {
    const uint64_t now = 1000 + uint64_t(i) * 10;
    ASSERT_NE(e.on_failure(failure(0, 64 + uint64_t(i), 1, 7), now, 0, kWindow, &t1), 0u);
    ASSERT_TRUE(e.on_success(&t1, 1, HookId::cudaMalloc, 0, 64 + uint64_t(i), now + 1, 0));
  }
  RecoveredList l = e.recovered();
  EXPECT_EQ(l.count, uint64_t(n));
  ASSERT_EQ(l.listed.size(), Episodes::kListed);
  EXPECT_EQ(l.listed.front().size, 64u + 8u);  // the oldest of the newest kListed
  EXPECT_EQ(l.listed.back().size, 64u + uint64_t(n) - 1);
  EXPECT_EQ(l.listed.back().stack_id, 7u);
  EXPECT_EQ(e.recovered_total(), uint64_t(n));
  e.clear_recovered(l.up_to);  // a bundle listing them was kept
  EXPECT_EQ(e.recovered().count, 0u);
  EXPECT_EQ(e.recovered_total(), uint64_t(n));
  // GPUMEMREC_RECOVERED=keep: recovered episodes have bundles, not counted.
  e.set_counting(false);
  ASSERT_NE(e.on_failure(failure(0, 64, 1), 9000, 0, kWindow, &t1), 0u);
  ASSERT_TRUE(e.on_success(&t1, 1, HookId::cudaMalloc, 0, 64, 9001, 0));
  EXPECT_EQ(e.recovered_total(), uint64_t(n));
}

// A watched episode keeps its verdict however many close after it; once
// unwatched, only the newest kHistory closed ones are remembered. The dumper
// evicting a deferred record read the verdict after unwatching it and
// counted a recovered episode as missed (seen in recover_minute under CPU
// overload: one "got no bundle" line in a run of 52,000 recovered episodes).
TEST(Episodes, ReleaseReadsTheVerdictBeforeForgettingIt) {
  Episodes e;
  PendingRequest t1{};
  const uint64_t old = e.on_failure(failure(0, 64, 1), 1000, 0, kWindow, &t1);
  ASSERT_TRUE(e.on_success(&t1, 1, HookId::cudaMalloc, 0, 64, 1001, 0));
  uint64_t now = 2000;
  for (size_t i = 0; i < Episodes::kHistory + 1; ++i, now += 10) {  // recovered at once, unwatched by their jobs
    const uint64_t id = e.on_failure(failure(0, 64, 1), now, 0, kWindow, &t1);
    ASSERT_TRUE(e.on_success(&t1, 1, HookId::cudaMalloc, 0, 64, now + 1, 0));
    e.unwatch(id);
  }
  EXPECT_EQ(e.verdict(old).outcome, Outcome::kRecovered);  // still watched
  EXPECT_EQ(e.release(old).outcome, Outcome::kRecovered);
  EXPECT_EQ(e.verdict(old).outcome, Outcome::kUnknown);    // what the dumper read before the fix
}

// The failure that opened an episode got no bundle (the writer's sets and
// queue full): counting recovered episodes, one that recovers is counted
// once, as recovered; a miss counts only when it ends otherwise (ASan's
// recover_minute said a failure both recovered and "got no bundle").
TEST(Episodes, AMissedOpenerCountsOnlyIfItsEpisodeDoesNotRecover) {
  Episodes e;
  PendingRequest t1{};
  const uint64_t recovered = e.on_failure(failure(0, 64, 1), 1000, 0, kWindow, &t1);
  e.unwatch(recovered);  // what freeze_for_writer does when it gives up
  EXPECT_TRUE(e.miss_unless_recovered(recovered));
  ASSERT_TRUE(e.on_success(&t1, 1, HookId::cudaMalloc, 0, 64, 1001, 0));
  EXPECT_EQ(e.missed_at_close(), 0u);
  EXPECT_EQ(e.recovered_total(), 1u);
  EXPECT_EQ(e.take_unreported(), 1u);  // once, as the recovered episode's failure
  EXPECT_TRUE(e.miss_unless_recovered(recovered));  // decided already: nothing to count
  const uint64_t fatal = e.on_failure(failure(0, 64, 1), 2000, 0, kWindow, &t1);
  e.unwatch(fatal);
  EXPECT_TRUE(e.miss_unless_recovered(fatal));
  EXPECT_TRUE(e.expire(5000, kWindow, false, FatalCause::kNoRetry));
  EXPECT_EQ(e.missed_at_close(), 1u);
  EXPECT_EQ(e.take_unreported(), 1u);
  EXPECT_FALSE(e.miss_unless_recovered(fatal));  // closed fatal: count it now
  // GPUMEMREC_RECOVERED=keep: a recovered episode was owed its bundle.
  e.set_counting(false);
  const uint64_t kept = e.on_failure(failure(0, 64, 1), 9000, 0, kWindow, &t1);
  EXPECT_FALSE(e.miss_unless_recovered(kept));
}

TEST(Episodes, ResetForgetsTheOpenEpisode) {
  Episodes e;
  PendingRequest t1{};
  const uint64_t a = e.on_failure(failure(0, 64, 1), 10, 0, kWindow, &t1);
  e.missed();
  e.reset();
  EXPECT_EQ(e.take_unreported(), 0u);
  EXPECT_EQ(e.deadline_ns(kWindow), 0u);
  EXPECT_EQ(e.verdict(a).outcome, Outcome::kUnknown);
  // The forking thread's stale request does not join the child's episodes.
  const uint64_t b = e.on_failure(failure(0, 64, 1), 20, 0, kWindow, &t1);
  EXPECT_NE(b, a);
}

namespace {

std::vector<std::string> bundles_in(const std::string& d) {
  std::vector<std::string> out;
  if (DIR* dir = opendir(d.c_str())) {
    while (dirent* e = readdir(dir))
      if (std::string(e->d_name).rfind("oom_dump_", 0) == 0) out.push_back(e->d_name);
    closedir(dir);
  }
  // By <seq>, the sixth field of the name (docs/bundle-format.md).
  auto seq = [](const std::string& n) {
    size_t p = 0;
    for (int field = 0; field < 5; ++field) p = n.find('_', p) + 1;
    return std::stoi(n.substr(p, n.find('_', p) - p));
  };
  std::sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) { return seq(a) < seq(b); });
  return out;
}

uint64_t failed_before(const std::string& bundle) {
  std::ifstream in(bundle + "/metadata.json");
  std::stringstream ss;
  ss << in.rdbuf();
  rapidjson::Document d;
  d.Parse(ss.str().c_str());
  EXPECT_TRUE(d.IsObject() && d.HasMember("failed_calls_before_dump")) << bundle;
  return d["failed_calls_before_dump"].GetUint64();
}

void fail_alloc() {
  FailureInfo f;
  if (record_alloc_failure(HookId::cudaMalloc, 0, 1ull << 40, 0, MemoryType::kDevice, monotonic_ns(), 2, true,
                           DumpReason::kOom, &f))
    dumper_on_failure(f);
}

}  // namespace

TEST(Episodes, DumperWritesFailedCallsBeforeDump) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  char tmpl[] = "/tmp/gpumemrec-unit-ep-XXXXXX";
  r->cfg.dir = mkdtemp(tmpl);
  r->cfg.max_dumps = 0;
  // Long enough that a slow dump (a loaded machine) stays within it.
  r->cfg.episode_ms = 3000;
  usleep(3100000);  // out of any episode an earlier test left
  fail_alloc();    // bundle 1 (written by the writer thread; fatal after the window)
  fail_alloc();    // retries: same episode
  fail_alloc();
  usleep(3100000);
  fail_alloc();  // a new episode: bundle 2 reports the two retries
  ASSERT_TRUE(wait_while_dumping(20000));  // its verdict comes with the window
  auto names = bundles_in(r->cfg.dir);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(failed_before(r->cfg.dir + "/" + names[0]), 0u);
  EXPECT_EQ(failed_before(r->cfg.dir + "/" + names[1]), 2u);
  // A signal dump takes the count too (nothing since bundle 2).
  ASSERT_TRUE(dump_now(r, DumpReason::kSignal, nullptr));
  names = bundles_in(r->cfg.dir);
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(failed_before(r->cfg.dir + "/" + names[2]), 0u);
  r->cfg.max_dumps = 5;
  r->cfg.episode_ms = 60000;
}

// The framework's own word (PyTorch's out-of-memory observer): the open
// episode on its device is fatal at once, without waiting for the window.
TEST(Episodes, TheFrameworkClosesTheOpenEpisodeOnItsDeviceAsFatal) {
  Episodes e;
  PendingRequest t1{};
  const uint64_t id = e.on_failure(failure(1, 64, 1), 1000, 500, kWindow, &t1);
  EXPECT_EQ(e.open_on(0), 0u);  // another device: not this episode
  EXPECT_EQ(e.open_on(1), id);
  EXPECT_EQ(e.open_on(-1), id);
  EXPECT_FALSE(e.close_fatal(id + 1, FatalCause::kFramework));  // not the open one
  EXPECT_TRUE(e.close_fatal(id, FatalCause::kFramework));
  const Verdict v = e.verdict(id);
  EXPECT_EQ(v.outcome, Outcome::kFatal);
  EXPECT_EQ(v.cause, FatalCause::kFramework);
  EXPECT_EQ(e.open_on(1), 0u);
  EXPECT_FALSE(e.close_fatal(id, FatalCause::kFramework));  // decided already
}

// PyTorch's observer begins its report, then walks the program's objects for
// longer than the window (a transformers model on a loaded machine took
// seconds): the episode waits for the framework's word instead of closing
// on its window and leaving the report a bundle of its own.
TEST(Episodes, AHeldEpisodeWaitsForTheFrameworksWord) {
  Episodes e;
  PendingRequest t1{};
  const uint64_t id = e.on_failure(failure(0, 64, 1), 1000, 0, kWindow, &t1);
  EXPECT_FALSE(e.hold(id + 1, 1000 + 50 * kWindow));  // not the open one
  EXPECT_TRUE(e.hold(id, 1000 + 50 * kWindow));
  EXPECT_EQ(e.deadline_ns(kWindow), 1000 + 50 * kWindow);
  EXPECT_FALSE(e.expire(1000 + 10 * kWindow, kWindow, false, FatalCause::kNoRetry));
  // A failure of another thread meanwhile joins it: the window is held too.
  PendingRequest t2{};
  EXPECT_EQ(e.on_failure(failure(0, 64, 2), 1000 + 20 * kWindow, 0, kWindow, &t2), 0u);
  EXPECT_TRUE(e.close_fatal(id, FatalCause::kFramework));
  EXPECT_EQ(e.verdict(id).cause, FatalCause::kFramework);
  // The next episode is not held: the hold was that episode's.
  PendingRequest t3{};
  const uint64_t next = e.on_failure(failure(0, 64, 3), 1000 + 60 * kWindow, 0, kWindow, &t3);
  EXPECT_EQ(e.deadline_ns(kWindow), 1000 + 61 * kWindow);
  EXPECT_TRUE(e.expire(1000 + 61 * kWindow, kWindow, false, FatalCause::kNoRetry));
  EXPECT_EQ(e.verdict(next).cause, FatalCause::kNoRetry);
}

// A report that never comes (the hook failed): the episode closes when the
// hold ends, or at once when the program ends.
TEST(Episodes, AHoldEndsWithoutTheFrameworksWord) {
  Episodes e;
  PendingRequest t1{};
  const uint64_t id = e.on_failure(failure(0, 64, 1), 1000, 0, kWindow, &t1);
  EXPECT_TRUE(e.hold(id, 1000 + 30 * kWindow));
  EXPECT_FALSE(e.expire(1000 + 29 * kWindow, kWindow, false, FatalCause::kNoRetry));
  EXPECT_TRUE(e.expire(1000 + 30 * kWindow, kWindow, false, FatalCause::kNoRetry));
  const uint64_t b = e.on_failure(failure(0, 64, 1), 1000 + 40 * kWindow, 0, kWindow, &t1);
  EXPECT_TRUE(e.hold(b, 1000 + 90 * kWindow));
  EXPECT_TRUE(e.expire(1000 + 41 * kWindow, kWindow, true, FatalCause::kExit));
  EXPECT_EQ(e.verdict(b).cause, FatalCause::kExit);
}

// A trainer's handler caught the framework's error and retries with less:
// recovered, named, with the bytes freed since the first failure. Only an
// episode the framework's report holds, on that device.
TEST(Episodes, AHandlerThatCaughtTheErrorRecoversTheHeldEpisode) {
  Episodes e;
  PendingRequest t1{};
  const uint64_t id = e.on_failure(failure(0, 64, 1), 1000, 500, kWindow, &t1);
  EXPECT_EQ(e.close_by_handler(0, "h", 7, 1100, 300), 0u);  // not held: no framework report
  ASSERT_TRUE(e.hold(id, 1000 + 50 * kWindow));
  EXPECT_EQ(e.close_by_handler(1, "h", 7, 1100, 300), 0u);  // another device
  const std::string longer(100, 'x');                       // kept to Recovery::kHandlerBytes - 1
  EXPECT_EQ(e.close_by_handler(0, longer.c_str(), 7, 1200, 300), id);
  const Verdict v = e.verdict(id);
  EXPECT_EQ(v.outcome, Outcome::kRecovered);
  EXPECT_EQ(v.recovery.tid, 7u);
  EXPECT_EQ(v.recovery.after_ns, 200u);
  EXPECT_EQ(v.recovery.freed_bytes, 200u);
  EXPECT_EQ(v.recovery.retry_size, 0u);
  EXPECT_EQ(std::string(v.recovery.handler), longer.substr(0, Recovery::kHandlerBytes - 1));
  EXPECT_EQ(e.close_by_handler(0, "h", 7, 1300, 300), 0u);  // decided already
  EXPECT_EQ(e.recovered().count, 1u);                       // counted like any recovered episode
  // The next episode is not held: a late catch does not decide it.
  PendingRequest t2{};
  const uint64_t other = e.on_failure(failure(0, 64, 2), 2000, 500, kWindow, &t2);
  EXPECT_EQ(e.close_by_handler(0, "h", 7, 2001, 300), 0u);
  // Recovered by a retry of the same size: no handler named.
  ASSERT_TRUE(e.on_success(&t2, 2, HookId::cudaMalloc, 0, 64, 2002, 400));
  EXPECT_EQ(e.verdict(other).recovery.handler[0], '\0');
}

// The opener's freeze ran on the program's thread for longer than the window:
// the window counts from the call's return, so exit at once is `exited`, not
// `no retry` (the e2e exit_big_live_set saw that on a loaded machine).
TEST(Episodes, TheWindowStartsWhenTheFailingCallReturns) {
  Episodes e;
  PendingRequest t1{};
  const uint64_t a = e.on_failure(failure(0, 64, 1), 1000, 0, kWindow, &t1);
  e.returned(a, 1000 + 5 * kWindow);  // a freeze of five windows
  EXPECT_FALSE(e.expire(1000 + 5 * kWindow + 1, kWindow, false, FatalCause::kNoRetry));
  EXPECT_TRUE(e.expire(1000 + 6 * kWindow, kWindow, false, FatalCause::kNoRetry));
  // A closed episode is not reopened by a late return.
  e.returned(a, 1000 + 9 * kWindow);
  EXPECT_EQ(e.verdict(a).outcome, Outcome::kFatal);
  EXPECT_EQ(e.deadline_ns(kWindow), 0u);
}

TEST(Episodes, RecoveredFailuresAreListedByTheTimeOfTheirFailure) {
  // Thread 2 stamped its failure (time 500) before thread 1 (time 900) but
  // took the lock after thread 1's episode had recovered: its episode is the
  // newer one, its failure the older.
  Episodes e;
  PendingRequest t1{}, t2{};
  FailureInfo late = failure(0, 64, 1);
  late.time_ns = 900;
  ASSERT_NE(e.on_failure(late, 1000, 0, kWindow, &t1), 0u);
  ASSERT_TRUE(e.on_success(&t1, 1, HookId::cudaMalloc, 0, 64, 1001, 0));
  FailureInfo early = failure(0, 128, 2);
  early.time_ns = 500;
  ASSERT_NE(e.on_failure(early, 1002, 0, kWindow, &t2), 0u);
  ASSERT_TRUE(e.on_success(&t2, 2, HookId::cudaMalloc, 0, 128, 1003, 0));
  RecoveredList l = e.recovered();
  ASSERT_EQ(l.listed.size(), 2u);
  EXPECT_EQ(l.listed[0].time_ns, 500u);
  EXPECT_EQ(l.listed[1].time_ns, 900u);
  EXPECT_EQ(l.up_to, 2u);  // clearing still goes by the order they were decided in
}
