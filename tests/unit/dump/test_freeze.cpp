// The freeze (shim/dump/capture/freeze.h): the live table copied without
// allocating, the frozen sets handed out one per bundle in the works, and
// the ring handed over to the writer instead of copied.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "shim/dump/capture/freeze.h"
#include "shim/record/live_table.h"
#include "shim/record/recorder.h"

using namespace gpumemrec;

namespace {

LiveEntry entry(uint64_t key) {
  LiveEntry e;
  e.key = key;
  e.size = key * 2;
  e.device = 0;
  return e;
}

}  // namespace

TEST(Freeze, SnapshotIntoCopiesEveryEntryOrSaysItDoesNotFit) {
  LiveTable t;
  for (uint64_t k = 1; k <= 5000; ++k) ASSERT_TRUE(t.insert(entry(k * 4096)));
  for (uint64_t k = 1; k <= 5000; k += 2) ASSERT_TRUE(t.remove(k * 4096, nullptr));
  std::vector<LiveEntry> out(2500);
  EXPECT_EQ(t.snapshot_into(out.data(), 2499), UINT64_MAX);  // one short
  ASSERT_EQ(t.snapshot_into(out.data(), out.size()), 2500u);
  std::vector<uint64_t> keys;
  for (const LiveEntry& e : out) {
    EXPECT_EQ(e.size, e.key / 4096 * 2 * 4096);
    keys.push_back(e.key / 4096);
  }
  std::sort(keys.begin(), keys.end());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(keys[i], 2 * (i + 1));  // exactly the even ones
}

TEST(Freeze, TwoPooledSetsThenNone) {
  ASSERT_NE(recorder(), nullptr);  // the shim's start-up reserved the sets
  std::vector<int> got;
  for (int i = 0; i < kPooledSets + 1; ++i) got.push_back(freeze_acquire());
  EXPECT_NE(got[0], -1);
  EXPECT_NE(got[1], -1);
  EXPECT_NE(got[0], got[1]);
  EXPECT_EQ(got[2], -1);  // both in the works: the failure goes without a bundle
  EXPECT_NE(got[0], kInlineSet);
  EXPECT_NE(got[1], kInlineSet);
  freeze_done(got[1]);
  EXPECT_EQ(freeze_acquire(), got[1]);
  freeze_done(got[0]);
  freeze_done(got[1]);
}

TEST(Freeze, CopiesTheRingAndTheLiveTables) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  const uint64_t t0 = 1;
  record_alloc(HookId::cudaMalloc, 0, 0x5f0000001000, 4096, 0, MemoryType::kDevice, t0, 0);
  const int set = freeze_acquire();
  ASSERT_GE(set, 0);
  FrozenState f;
  const char* why = "";
  ASSERT_TRUE(freeze(r, set, &f, &why)) << why;
  EXPECT_EQ(f.end_seq, r->ring.end());
  freeze_collect(set, &f);  // the writer's part of the hand-over
  ASSERT_GT(f.event_count, 0u);
  EXPECT_EQ(f.events[f.event_count - 1].address, 0x5f0000001000u);  // the newest event
  bool found = false;
  for (uint64_t i = 0; i < f.live_count; ++i) found = found || f.live[i].key == 0x5f0000001000u;
  EXPECT_TRUE(found);
  freeze_done(set);
  PendingFree p = begin_free(0x5f0000001000, MemoryType::kDevice);
  end_free(HookId::cudaFree, p, 0x5f0000001000, -1, 0, MemoryType::kDevice, t0, 0);
}

namespace {

std::vector<uint64_t> live_keys(const FrozenState& f, uint64_t lo, uint64_t hi) {
  std::vector<uint64_t> keys;
  for (uint64_t i = 0; i < f.live_count; ++i)
    if (f.live[i].key >= lo && f.live[i].key < hi) keys.push_back(f.live[i].key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

void alloc_at(uint64_t a) { record_alloc(HookId::cudaMalloc, 0, a, 4096, 0, MemoryType::kDevice, 1, 0); }
void free_at(uint64_t a) {
  PendingFree p = begin_free(a, MemoryType::kDevice);
  end_free(HookId::cudaFree, p, a, -1, 0, MemoryType::kDevice, 1, 0);
}

}  // namespace

// A failure's freeze copies no live entry: the tables are held, the program
// frees and allocates before the writer collects, and the collect is the
// tables at the freeze. A second failure meanwhile (the other pooled set)
// copies at once, its own moment.
TEST(Freeze, TheLiveTablesAreHeldForTheWriter) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  constexpr uint64_t kLo = 0x5d0000000000, kHi = kLo + (uint64_t(1) << 32);
  for (uint64_t i = 0; i < 400; ++i) alloc_at(kLo + i * 4096);
  const int s1 = freeze_acquire();
  FrozenState f1;
  const char* why = "";
  ASSERT_TRUE(freeze(r, s1, &f1, &why)) << why;
  EXPECT_EQ(f1.live_count, 0u);  // nothing copied on the failing thread
  for (uint64_t i = 0; i < 200; ++i) free_at(kLo + i * 4096);
  for (uint64_t i = 400; i < 500; ++i) alloc_at(kLo + i * 4096);
  const int s2 = freeze_acquire();
  FrozenState f2;
  ASSERT_TRUE(freeze(r, s2, &f2, &why)) << why;
  EXPECT_EQ(live_keys(f2, kLo, kHi).size(), 300u);  // copied at once: 200-499
  for (uint64_t i = 200; i < 500; ++i) free_at(kLo + i * 4096);
  freeze_collect(s1, &f1);
  const std::vector<uint64_t> k1 = live_keys(f1, kLo, kHi);
  ASSERT_EQ(k1.size(), 400u);
  for (uint64_t i = 0; i < 400; ++i) EXPECT_EQ(k1[i], kLo + i * 4096);
  freeze_collect(s2, &f2);
  EXPECT_EQ(live_keys(f2, kLo, kHi).size(), 300u);
  freeze_done(s1);
  freeze_done(s2);
}

// A bundle given up before its collect ends the hold: the next freeze holds.
TEST(Freeze, AGivenUpJobEndsItsHold) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  const char* why = "";
  for (int round = 0; round < 3; ++round) {
    const int s = freeze_acquire();
    FrozenState f;
    ASSERT_TRUE(freeze(r, s, &f, &why)) << why;
    EXPECT_EQ(f.live_count, 0u) << "round " << round << ": the hold was still pending";
    freeze_done(s);
  }
}

namespace {

constexpr uint64_t kBase = 0x5e0000000000;

// One allocation recorded through the recorder (the hot path), freed again
// unless `keep`.
void alloc_free(uint64_t i, bool keep = false) {
  const uint64_t a = kBase + i * 4096;
  record_alloc(HookId::cudaMalloc, 0, a, 4096, 0, MemoryType::kDevice, 1, 0);
  if (keep) return;
  PendingFree p = begin_free(a, MemoryType::kDevice);
  end_free(HookId::cudaFree, p, a, -1, 0, MemoryType::kDevice, 1, 0);
}

// The frozen window is what a single ring would have held: the seqs of the
// last `capacity` before the cut, in order, each once. The holes are the
// unused seqs of this thread's blocks (ring.h, "Blocks": the one it held at
// the cut, and one dropped at each earlier swap): the events these tests
// recorded are all there. `swaps`: freezes within the window before this one.
void expect_window(const Recorder* r, const FrozenState& f, uint64_t swaps = 0) {
  ASSERT_GT(f.event_count, 0u);
  const uint64_t cap = r->ring.capacity();
  const uint64_t first = f.end_seq > cap + 1 ? f.end_seq - cap : 1;
  EXPECT_GE(f.event_count + (swaps + 1) * r->ring.block_size(), f.end_seq - first);
  EXPECT_GE(f.events[0].seq, first);
  for (uint64_t i = 1; i < f.event_count; ++i) ASSERT_GT(f.events[i].seq, f.events[i - 1].seq) << i;
  EXPECT_LT(f.events[f.event_count - 1].seq, f.end_seq);
  EXPECT_GE(f.events[f.event_count - 1].seq + r->ring.block_size(), f.end_seq);
}

}  // namespace

// The failing thread copies nothing of the ring: a spare buffer goes live,
// the events after the cut land there, and the writer's copy (after them)
// is still exactly the window before the cut.
TEST(FreezeHandover, TheFailingThreadCopiesNoEventAndTheWriterGetsTheWindow) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->ring.buffers(), kRingBuffers);
  for (uint64_t i = 0; i < 100; ++i) alloc_free(i);
  const int live_before = r->ring.live_buffer();
  const int set = freeze_acquire();
  ASSERT_GE(set, 0);
  FrozenState f;
  const char* why = "";
  ASSERT_TRUE(freeze(r, set, &f, &why)) << why;
  EXPECT_NE(r->ring.live_buffer(), live_before);
  EXPECT_EQ(f.event_count, 0u);  // nothing copied on the failing thread
  for (uint64_t i = 100; i < 150; ++i) alloc_free(i);  // after the cut: in the new buffer
  EXPECT_EQ(r->ring.end(), f.end_seq + (100 + r->ring.block_size() - 1) / r->ring.block_size() * r->ring.block_size());
  freeze_collect(set, &f);
  expect_window(r, f);
  EXPECT_EQ(f.events[f.event_count - 1].address, kBase + 99 * 4096);
  freeze_done(set);
}

// The next bundle's window runs back through the buffer the first freeze
// handed over (once its writer is done): the events before the first cut
// and after it, one gap-free sequence.
TEST(FreezeHandover, TheNextBundleSeesTheHandedOverHistory) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  FrozenState f1, f2;
  const char* why = "";
  for (uint64_t i = 0; i < 100; ++i) alloc_free(i);
  int set = freeze_acquire();
  ASSERT_TRUE(freeze(r, set, &f1, &why)) << why;
  freeze_collect(set, &f1);
  freeze_done(set);
  for (uint64_t i = 100; i < 200; ++i) alloc_free(i);
  set = freeze_acquire();
  ASSERT_TRUE(freeze(r, set, &f2, &why)) << why;
  freeze_collect(set, &f2);
  expect_window(r, f2, 1);
  EXPECT_LT(f2.events[0].seq, f1.end_seq);  // history from the first buffer
  freeze_done(set);
}

// Two bundles in the works at once (their windows pinned), then more
// freezes: each window is complete whatever buffers it spans, and a freeze
// with no spare left copies everything itself.
TEST(FreezeHandover, PinnedWindowsAreNeverOverwritten) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  const char* why = "";
  FrozenState f[3];
  int sets[2];
  for (int k = 0; k < 2; ++k) {
    for (uint64_t i = 0; i < 300; ++i) alloc_free(i);
    sets[k] = freeze_acquire();
    ASSERT_GE(sets[k], 0);
    ASSERT_TRUE(freeze(r, sets[k], &f[k], &why)) << why;
  }
  // A signal or exit dump meanwhile (the inline set): copies, never swaps.
  const int live = r->ring.live_buffer();
  for (uint64_t i = 0; i < 300; ++i) alloc_free(i);
  ASSERT_TRUE(freeze(r, kInlineSet, &f[2], &why)) << why;
  EXPECT_EQ(r->ring.live_buffer(), live);
  expect_window(r, f[2], 2);
  freeze_collect(kInlineSet, &f[2]);  // nothing left to collect
  expect_window(r, f[2], 2);
  freeze_done(kInlineSet);
  for (uint64_t i = 0; i < 300; ++i) alloc_free(i);
  for (int k = 0; k < 2; ++k) {
    freeze_collect(sets[k], &f[k]);
    expect_window(r, f[k], uint64_t(k));
    freeze_done(sets[k]);
  }
}

// The hot path runs on other threads through every freeze: a thread in the
// middle of a publish when the ring is swapped finishes into the buffer it
// claimed in. Every window is one run of seqs up to the cut, with holes
// only where the threads' blocks were left unused at a cut and where an
// event was in flight at the cut (as documented), and no event is torn.
// ThreadSanitizer runs this one.
TEST(FreezeHandover, FreezesWhileOtherThreadsRecord) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  constexpr int kThreads = 3;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) alloc_free(uint64_t(t + 1) << 24 | (i & 0xffff));
    });
  const char* why = "";
  for (int round = 0; round < 20; ++round) {
    const uint64_t want = r->ring.end() + 100;  // some events in each window, whatever the scheduling
    while (r->ring.end() < want) std::this_thread::yield();
    const int set = freeze_acquire();
    ASSERT_GE(set, 0);
    FrozenState f;
    ASSERT_TRUE(freeze(r, set, &f, &why)) << why;
    freeze_collect(set, &f);
    ASSERT_GT(f.event_count, 0u);
    const uint64_t cap = r->ring.capacity();
    EXPECT_GE(f.events[0].seq, f.end_seq > cap + 1 ? f.end_seq - cap : 1);
    // Holes in the seqs are by design (the unused parts of blocks, blocks a
    // thread gave up: ring.h, "Blocks"); a lost EVENT is not. Each thread
    // records alloc(i), free(i), alloc(i + 1), ... so its events in the
    // window must be one run of those steps, but for at most one event in
    // flight at the cut that the copy gave up on after 2 ms.
    uint64_t next_step[kThreads + 1] = {};
    int gaps[kThreads + 1] = {};
    for (uint64_t i = 0; i < f.event_count; ++i) {
      const uint64_t slot = (f.events[i].address - kBase) / 4096;
      const uint64_t t = slot >> 24;
      ASSERT_TRUE(t >= 1 && t <= kThreads) << "torn event";
      const uint64_t step = ((slot & 0xffff) * 2 + (event_kind(f.events[i]) == EventKind::kFree ? 1 : 0)) & 0x1ffff;
      if (next_step[t] && step != next_step[t] - 1) ++gaps[t];
      next_step[t] = ((step + 1) & 0x1ffff) + 1;  // + 1: 0 means "no event of t yet"
    }
    for (int t = 1; t <= kThreads; ++t) EXPECT_LE(gaps[t], 1) << "thread " << t << " lost events in the window";
    for (uint64_t i = 0; i < f.event_count; ++i) {
      const Event& e = f.events[i];
      ASSERT_LT(e.seq, f.end_seq);
      if (i) {
        ASSERT_GT(e.seq, f.events[i - 1].seq);
      }
      ASSERT_EQ(e.address >> 40, kBase >> 40) << "torn event";
      ASSERT_EQ(e.size, 4096u);
    }
    freeze_done(set);
    std::this_thread::yield();
  }
  stop = true;
  for (auto& t : threads) t.join();
}

// fork while a window is handed over and not yet copied: in the child the
// parent's writer does not exist; its pins are gone, and the child freezes,
// collects and gets a full window of its own.
TEST(FreezeHandover, ForkWhileAWindowIsHandedOver) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  for (uint64_t i = 0; i < 100; ++i) alloc_free(i);
  const int set = freeze_acquire();
  FrozenState f;
  const char* why = "";
  ASSERT_TRUE(freeze(r, set, &f, &why)) << why;
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(20);
    for (int round = 0; round < 6; ++round) {  // more freezes than there are spare buffers
      for (uint64_t i = 0; i < 50; ++i) alloc_free(i);
      const int s = freeze_acquire();
      FrozenState c;
      if (s < 0 || !freeze(r, s, &c, &why)) _exit(2);
      freeze_collect(s, &c);
      const uint64_t first = c.end_seq > r->ring.capacity() + 1 ? c.end_seq - r->ring.capacity() : 1;
      // every seq but the unused parts of this thread's blocks (one per swap)
      if (c.event_count > c.end_seq - first || c.event_count + uint64_t(round + 2) * r->ring.block_size() < c.end_seq - first)
        _exit(3);
      freeze_done(s);
    }
    _exit(0);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << "child killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
  freeze_collect(set, &f);
  expect_window(r, f);
  freeze_done(set);
}
