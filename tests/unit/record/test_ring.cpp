#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

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
