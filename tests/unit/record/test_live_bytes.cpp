// LiveBytes (shim/record/live_bytes.h): per-thread slabs summed on read, the
// exact counter of a limited device, a free on another thread than its
// allocation, more threads than slabs.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "shim/record/live_bytes.h"

using namespace gpumemrec;

TEST(LiveBytes, SumsEveryThreadsSlab) {
  static LiveBytes b;  // 20 KiB: not on the test's stack
  constexpr int kThreads = LiveBytes::kShards + 8;  // some threads share a slab
  constexpr int kRounds = 20000;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([t] {
      for (int i = 0; i < kRounds; ++i) b.add(t % 3, 64);
      b.add(t % 3, -64 * (kRounds - 1));  // keeps 64 per thread
    });
  for (auto& t : ts) t.join();
  uint64_t total = 0;
  for (int d = 0; d < 3; ++d) total += b.read(d);
  EXPECT_EQ(total, uint64_t(kThreads) * 64);
  EXPECT_EQ(b.read(0), uint64_t((kThreads + 2) / 3) * 64);
}

TEST(LiveBytes, AFreeOnAnotherThreadKeepsTheSumRight) {
  static LiveBytes b;
  std::thread([] { b.add(1, 1000); }).join();
  std::thread([] { b.add(1, -400); }).join();  // its slab goes negative
  EXPECT_EQ(b.read(1), 600u);
  std::thread([] { b.add(1, -600); }).join();
  EXPECT_EQ(b.read(1), 0u);
  b.add(1, -5);  // more freed than counted (an allocation made before the recorder started)
  EXPECT_EQ(b.read(1), 0u);  // clamped, never a huge unsigned total
}

TEST(LiveBytes, ExactCounterAndUnknownDevices) {
  static LiveBytes b;
  b.add_exact(2, 300);
  b.add(2, 10);  // a limited device's slabs stay 0 in the shim; the read adds both anyway
  EXPECT_EQ(b.read(2), 310u);
  int64_t cur = b.exact(2).load();
  EXPECT_TRUE(b.exact(2).compare_exchange_strong(cur, cur + 50));
  EXPECT_EQ(b.read(2), 360u);
  b.add(-1, 7);           // unknown device
  b.add(kMaxDevices, 8);  // out of range: the same slot
  EXPECT_EQ(b.read(-1), 15u);
  EXPECT_EQ(b.read(kMaxDevices + 5), 15u);
}
