// LiveBytes (shim/record/live_bytes.h): per-thread slabs summed on read, the
// exact counter of a limited device, a free on another thread than its
// allocation, more threads than slabs.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "shim/record/live_bytes.h"
#include "shim/record/recorder.h"

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

// Through the recorder: allocations on several threads, each freed on
// another thread; device_live_bytes (the failing call's live_on_device)
// sums the slabs. Device 47: no other test uses it.
TEST(LiveBytes, RecorderCountsAllocationsFreedOnOtherThreads) {
  ASSERT_NE(recorder(), nullptr);
  constexpr int kThreads = 6;
  constexpr uint64_t kBase = 0x470000000000ull;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([t] {
      for (uint64_t i = 0; i < 100; ++i)
        record_alloc(HookId::cudaMalloc, 47, kBase + (uint64_t(t) << 20) + i * 256, 256, 0, MemoryType::kDevice, 0, 0);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(device_live_bytes(47), uint64_t(kThreads) * 100 * 256);
  ts.clear();
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([t] {  // frees thread (t + 1)'s allocations, and half of them only
      const int owner = (t + 1) % kThreads;
      for (uint64_t i = 0; i < 50; ++i) {
        const uint64_t a = kBase + (uint64_t(owner) << 20) + i * 256;
        const PendingFree p = begin_free(a, MemoryType::kDevice);
        end_free(HookId::cudaFree, p, a, -1, 0, MemoryType::kDevice, 0, 0);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(device_live_bytes(47), uint64_t(kThreads) * 50 * 256);
}
