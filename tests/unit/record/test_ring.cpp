#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "shim/record/recorder.h"
#include "shim/record/ring.h"
#include "tests/unit/record/ring_fixture.h"

using namespace gpumemrec;

namespace {

Event make(uint64_t seq, uint64_t size) {
  Event e{};
  e.seq = seq;
  e.size = size;
  e.address = seq * 4096;
  e.tid = 7;
  e.device1 = 1;
  e.kind_type = pack_kind_type(EventKind::kAlloc, MemoryType::kDevice);
  return e;
}

// Claims the next seq and publishes an event for it (in the buffer of the
// generation it was claimed in).
uint64_t put(Ring& ring, uint64_t size) {
  const Ring::Ticket t = ring.claim();
  ring.publish(make(t.seq, size), t.gen);
  return t.seq;
}

// `n` events whose size is three times their seq (a torn read would mix).
void put_many(Ring& ring, int n) {
  for (int i = 0; i < n; ++i) {
    const Ring::Ticket t = ring.claim();
    ring.publish(make(t.seq, t.seq * 3), t.gen);
  }
}

}  // namespace

TEST(Ring, EventIs64Bytes) { EXPECT_EQ(sizeof(Event), 64u); }

TEST(Ring, PublishAndRead) {
  RingFixture f(16);
  for (int i = 0; i < 10; ++i) put(f.ring, uint64_t(i));
  EXPECT_EQ(f.ring.end(), 11u);
  Event e;
  for (uint64_t s = 1; s <= 10; ++s) {
    ASSERT_TRUE(f.ring.read(s, &e));
    EXPECT_EQ(e.seq, s);
    EXPECT_EQ(e.size, s - 1);
    EXPECT_EQ(event_device(e), 0);
    EXPECT_EQ(event_kind(e), EventKind::kAlloc);
  }
  EXPECT_FALSE(f.ring.read(11, &e));
}

TEST(Ring, OverwrittenEventsBecomeHoles) {
  RingFixture f(16);
  for (int i = 0; i < 40; ++i) put(f.ring, uint64_t(i));
  Event e;
  for (uint64_t s = 1; s <= 24; ++s) EXPECT_FALSE(f.ring.read(s, &e)) << s;
  for (uint64_t s = 25; s <= 40; ++s) EXPECT_TRUE(f.ring.read(s, &e)) << s;
}

TEST(Ring, ConcurrentWritersEveryReadIsWhole) {
  RingFixture f(1024);
  constexpr int kThreads = 4, kPerThread = 50000;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> torn{0}, good{0};
  std::thread reader([&] {
    Event e;
    bool last_pass = false;
    while (!last_pass) {
      last_pass = stop.load();  // one more full pass after the writers stop
      uint64_t end = f.ring.end();
      for (uint64_t s = end > 1024 ? end - 1024 : 1; s < end; ++s) {
        if (!f.ring.read(s, &e)) continue;
        // Every field was written from the same seq: a torn read would mix.
        if (e.size != e.seq * 3 || e.address != e.seq * 4096) torn++;
        else good++;
      }
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t)
    writers.emplace_back([&] { put_many(f.ring, kPerThread); });
  for (auto& w : writers) w.join();
  stop = true;
  reader.join();
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_GT(good.load(), 0u);
  EXPECT_EQ(f.ring.end(), uint64_t(kThreads * kPerThread + 1));
  // After the writers stop, the last 1024 events are all readable.
  Event e;
  for (uint64_t s = f.ring.end() - 1024; s < f.ring.end(); ++s) EXPECT_TRUE(f.ring.read(s, &e));
}

// A thread of the parent holds a slot busy (mid-publish) when another thread
// forks: in the child that thread does not exist. The child's next writer on
// that slot must not spin for ever. alarm(): a hang fails the test
// (the child dies of SIGALRM) instead of hanging it.
TEST(Ring, SlotBusyAtForkIsUsableInTheChild) {
  RingFixture f(16);
  for (int i = 0; i < 16; ++i) put(f.ring, uint64_t(i));
  const Ring::Ticket held = f.ring.claim();  // seq 17: slot 1
  std::atomic<bool> taken{false}, release{false};
  std::thread writer([&] {
    ASSERT_NE(f.ring.take_slot(held.seq, held.gen), nullptr);
    taken = true;
    while (!release) std::this_thread::yield();
  });
  while (!taken) std::this_thread::yield();
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    f.ring.after_fork_in_child();  // what recorder_atfork_child does
    for (int i = 0; i < 32; ++i) put(f.ring, 100 + uint64_t(i));
    Event e;
    // Every slot, the one held at the fork included, holds a new event.
    bool ok = true;
    for (uint64_t s = f.ring.end() - 16; s < f.ring.end(); ++s) ok = ok && f.ring.read(s, &e) && e.seq == s;
    _exit(ok ? 0 : 3);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  release = true;
  writer.join();
  EXPECT_TRUE(WIFEXITED(status)) << "child hung (killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                 << ")";
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
  // In the parent the slot is still owned by its (live) writer: a hole.
  Event e;
  EXPECT_FALSE(f.ring.read(held.seq, &e));
}

// Without the epoch step the child would spin: the same scenario with the
// slot held in this very process must still exclude a second writer (the
// seqlock), which the take-over must not weaken.
TEST(Ring, BusySlotOfALiveWriterIsNotTakenOver) {
  RingFixture f(4);
  const Ring::Ticket t1 = f.ring.claim();
  const uint64_t s1 = t1.seq;
  uint64_t* w = f.ring.take_slot(s1, t1.gen);
  ASSERT_NE(w, nullptr);
  std::atomic<bool> done{false};
  std::thread second([&] {
    f.ring.publish(make(s1 + 4, 5), t1.gen);  // same slot, newer event: waits for the first writer
    done = true;
  });
  for (int i = 0; i < 1000; ++i) std::this_thread::yield();
  EXPECT_FALSE(done.load());
  Event e = make(s1, 1);
  uint64_t src[8];
  std::memcpy(src, &e, sizeof src);
  for (int i = 1; i < 8; ++i) __atomic_store_n(&w[i], src[i], __ATOMIC_RELAXED);
  __atomic_store_n(&w[0], src[0], __ATOMIC_RELEASE);
  second.join();
  EXPECT_TRUE(f.ring.read_in(0, s1 + 4, &e));  // (seq s1 + 4 was never claimed: read() would not look for it)
}

// The same through the process's recorder and its real fork handlers
// (lifecycle.cpp registers them): the child's publish on the slot a parent
// thread held busy at the fork completes.
TEST(Ring, RecorderForkHandlerReleasesBusySlots) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  const Ring::Ticket held = r->ring.claim();
  std::atomic<bool> taken{false}, release{false};
  std::thread writer([&] {
    ASSERT_NE(r->ring.take_slot(held.seq, held.gen), nullptr);
    taken = true;
    while (!release) std::this_thread::yield();
  });
  while (!taken) std::this_thread::yield();
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    r->ring.publish(make(held.seq + r->ring.capacity(), 1), held.gen);
    Event e;
    _exit(r->ring.read_in(r->ring.live_buffer(), held.seq + r->ring.capacity(), &e) ? 0 : 3);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  release = true;
  writer.join();
  EXPECT_TRUE(WIFEXITED(status)) << "child hung";
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

// Buffers and generations (the freeze's hand-over, ring.h).
struct MultiRing {
  MultiRing(uint64_t cap, int buffers) : mem(size_t(cap) * buffers) {
    ring.init(mem.data(), cap);
    for (int b = 1; b < buffers; ++b) EXPECT_EQ(ring.add_buffer(mem.data() + size_t(b) * cap), b);
  }
  std::vector<Event> mem;
  Ring ring;
};

TEST(RingSwap, SeqsStayDenseAcrossASwapAndTheWindowReadsFromBothBuffers) {
  MultiRing f(16, 2);
  for (int i = 0; i < 10; ++i) put(f.ring, 100 + uint64_t(i));  // seqs 1..10 in buffer 0
  EXPECT_EQ(f.ring.live_buffer(), 0);
  EXPECT_EQ(f.ring.swap_to(1), 11u);  // the cut: the first seq of the new generation
  EXPECT_EQ(f.ring.live_buffer(), 1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(put(f.ring, 200 + uint64_t(i)), 11u + i);  // no gap at the cut
  // The window [5, 21): 6 seqs from buffer 0, 10 from buffer 1, each where
  // its generation put it.
  Ring::Segment segs[4];
  ASSERT_EQ(f.ring.segments(5, 21, segs, 4), 2);
  EXPECT_EQ(segs[0].buffer, 1);
  EXPECT_EQ(segs[0].from, 11u);
  EXPECT_EQ(segs[0].to, 21u);
  EXPECT_EQ(segs[1].buffer, 0);
  EXPECT_EQ(segs[1].from, 5u);
  EXPECT_EQ(segs[1].to, 11u);
  Event e;
  for (uint64_t s = 5; s < 21; ++s) {
    ASSERT_TRUE(f.ring.read(s, &e)) << s;
    EXPECT_EQ(e.size, s <= 10 ? 100 + s - 1 : 200 + s - 11);
  }
  EXPECT_FALSE(f.ring.read_in(1, 5, &e));  // not in the other buffer
  EXPECT_FALSE(f.ring.read_in(0, 15, &e));
}

// A thread that claimed before the swap and publishes after it writes into
// the buffer that was handed over (the reader sees it there, complete),
// never into the new live one.
TEST(RingSwap, AWriterClaimingBeforeTheSwapPublishesIntoTheHandedOverBuffer) {
  MultiRing f(8, 2);
  put(f.ring, 1);
  const Ring::Ticket late = f.ring.claim();  // seq 2, generation 0
  const uint64_t cut = f.ring.swap_to(1);
  EXPECT_EQ(cut, 3u);
  const uint64_t after = put(f.ring, 3);
  EXPECT_EQ(after, 3u);
  Event e;
  EXPECT_FALSE(f.ring.read(late.seq, &e));  // in flight: a hole for now
  f.ring.publish(make(late.seq, 2), late.gen);
  ASSERT_TRUE(f.ring.read_in(0, late.seq, &e));
  EXPECT_EQ(e.size, 2u);
  EXPECT_FALSE(f.ring.read_in(1, late.seq, &e));
  ASSERT_TRUE(f.ring.read(late.seq, &e));
  ASSERT_TRUE(f.ring.read(after, &e));
  EXPECT_EQ(e.size, 3u);
}

// A buffer made live again (the third swap over three buffers) only
// overwrites seqs one ring older: the newest window is intact whatever
// buffers it spans, even with the swaps every few events.
TEST(RingSwap, TheNewestWindowIsIntactAcrossManySwaps) {
  MultiRing f(16, 3);
  int next = 1;
  for (int i = 1; i <= 200; ++i) {
    put(f.ring, uint64_t(i) * 3);
    if (i % 5 == 0) f.ring.swap_to(next++ % 3);
  }
  Event e;
  for (uint64_t s = f.ring.end() - 16; s < f.ring.end(); ++s) {
    ASSERT_TRUE(f.ring.read(s, &e)) << s;
    EXPECT_EQ(e.size, s * 3);
  }
}

// The hot path under swaps (ThreadSanitizer: data-race free): writers claim
// and publish from several threads while another thread swaps among three
// buffers and reads windows. A slot read is never torn (its fields match its
// seq); once the writers are done, the whole last window is there.
TEST(RingSwap, ConcurrentWritersReadersAndSwaps) {
  constexpr uint64_t kCap = 256;
  MultiRing f(kCap, 3);
  constexpr int kThreads = 4, kPerThread = 20000;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t)
    writers.emplace_back([&] {
      put_many(f.ring, kPerThread);
      running.fetch_sub(1);
    });
  uint64_t torn = 0, swaps = 0;
  while (running.load() > 0) {
    f.ring.swap_to(int(++swaps % 3));
    Event e;
    const uint64_t end = f.ring.end();
    for (uint64_t s = end > kCap ? end - kCap : 1; s < end; ++s)
      if (f.ring.read(s, &e) && (e.seq != s || e.size != s * 3 || e.address != s * 4096)) ++torn;
    std::this_thread::yield();
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(torn, 0u);
  EXPECT_GT(swaps, 0u);
  EXPECT_EQ(f.ring.end(), uint64_t(kThreads) * kPerThread + 1);
  Event e;
  for (uint64_t s = f.ring.end() - kCap; s < f.ring.end(); ++s) {
    ASSERT_TRUE(f.ring.read(s, &e)) << s;
    EXPECT_EQ(e.size, s * 3);
  }
}
