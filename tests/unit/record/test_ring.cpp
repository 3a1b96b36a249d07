#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "shim/record/recorder.h"
#include "shim/record/ring.h"

using namespace gpumemrec;

namespace {

struct RingFixture {
  explicit RingFixture(uint64_t cap) : mem(cap) { ring.init(mem.data(), cap); }
  std::vector<Event> mem;
  Ring ring;
};

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

}  // namespace

TEST(Ring, EventIs64Bytes) { EXPECT_EQ(sizeof(Event), 64u); }

TEST(Ring, PublishAndRead) {
  RingFixture f(16);
  for (int i = 0; i < 10; ++i) f.ring.publish(make(f.ring.claim(), uint64_t(i)));
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
  for (int i = 0; i < 40; ++i) f.ring.publish(make(f.ring.claim(), uint64_t(i)));
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
    writers.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        uint64_t s = f.ring.claim();
        f.ring.publish(make(s, s * 3));
      }
    });
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
  for (int i = 0; i < 16; ++i) f.ring.publish(make(f.ring.claim(), uint64_t(i)));
  const uint64_t held = f.ring.claim();  // seq 17: slot 1
  std::atomic<bool> taken{false}, release{false};
  std::thread writer([&] {
    ASSERT_NE(f.ring.take_slot(held), nullptr);
    taken = true;
    while (!release) std::this_thread::yield();
  });
  while (!taken) std::this_thread::yield();
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    f.ring.after_fork_in_child();  // what recorder_atfork_child does
    for (int i = 0; i < 32; ++i) f.ring.publish(make(f.ring.claim(), 100 + uint64_t(i)));
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
  EXPECT_FALSE(f.ring.read(held, &e));
}

// Without the epoch step the child would spin: the same scenario with the
// slot held in this very process must still exclude a second writer (the
// seqlock), which the take-over must not weaken.
TEST(Ring, BusySlotOfALiveWriterIsNotTakenOver) {
  RingFixture f(4);
  const uint64_t s1 = f.ring.claim();
  uint64_t* w = f.ring.take_slot(s1);
  ASSERT_NE(w, nullptr);
  std::atomic<bool> done{false};
  std::thread second([&] {
    f.ring.publish(make(s1 + 4, 5));  // same slot, newer event: waits for the first writer
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
  EXPECT_TRUE(f.ring.read(s1 + 4, &e));
}

// The same through the process's recorder and its real fork handlers
// (lifecycle.cpp registers them): the child's publish on the slot a parent
// thread held busy at the fork completes.
TEST(Ring, RecorderForkHandlerReleasesBusySlots) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  const uint64_t held = r->ring.claim();
  std::atomic<bool> taken{false}, release{false};
  std::thread writer([&] {
    ASSERT_NE(r->ring.take_slot(held), nullptr);
    taken = true;
    while (!release) std::this_thread::yield();
  });
  while (!taken) std::this_thread::yield();
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    r->ring.publish(make(held + r->ring.capacity(), 1));
    Event e;
    _exit(r->ring.read(held + r->ring.capacity(), &e) ? 0 : 3);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  release = true;
  writer.join();
  EXPECT_TRUE(WIFEXITED(status)) << "child hung";
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}
