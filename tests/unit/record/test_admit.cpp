// admit(): GPUMEMREC_LIMIT and GPUMEMREC_FAIL_AFTER, and the reservation it
// makes against the limit (check-then-act let concurrent
// allocations overshoot the limit). Uses devices the other tests never
// touch, on the process's recorder.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "shim/record/recorder.h"

using namespace gpumemrec;

namespace {

struct LimitScope {
  LimitScope(int device, uint64_t limit) : r(recorder()), device(device) {
    saved_has = r->cfg.has_limit;
    saved_limit = r->cfg.limit_bytes[device];
    r->cfg.has_limit = true;
    r->cfg.limit_bytes[device] = limit;
  }
  ~LimitScope() {
    r->cfg.has_limit = saved_has;
    r->cfg.limit_bytes[device] = saved_limit;
  }
  Recorder* r;
  int device;
  bool saved_has = false;
  uint64_t saved_limit = 0;
};

// Gives a reservation back the way a failed call does.
void release(int device, uint64_t size, uint64_t reserved) {
  FailureInfo f;
  record_alloc_failure(HookId::cudaMalloc, device, size, 0, MemoryType::kDevice, 0, 1, false, DumpReason::kNone, &f,
                       reserved);
}

}  // namespace

TEST(Admit, NoLimitReservesNothing) {
  ASSERT_NE(recorder(), nullptr);
  Admission a = admit(HookId::cudaMalloc, 40, 1 << 20);
  EXPECT_EQ(a.refused, DumpReason::kNone);
  EXPECT_EQ(a.reserved, 0u);
  EXPECT_EQ(device_live_bytes(40), 0u);
}

TEST(Admit, LimitReservesAndRefusesWhatDoesNotFit) {
  LimitScope scope(41, 100);
  Admission a = admit(HookId::cudaMalloc, 41, 60);
  EXPECT_EQ(a.refused, DumpReason::kNone);
  EXPECT_EQ(a.reserved, 60u);
  EXPECT_EQ(device_live_bytes(41), 60u);  // reserved before the real call
  Admission b = admit(HookId::cudaMalloc, 41, 50);
  EXPECT_EQ(b.refused, DumpReason::kLimit);
  EXPECT_EQ(b.reserved, 0u);
  Admission c = admit(HookId::cudaMalloc, 41, 40);  // exactly fills the limit
  EXPECT_EQ(c.refused, DumpReason::kNone);
  release(41, 40, c.reserved);
  release(41, 60, a.reserved);  // the real call failed: the bytes come back
  EXPECT_EQ(device_live_bytes(41), 0u);
  EXPECT_EQ(admit(HookId::cudaMalloc, 41, 101).refused, DumpReason::kLimit);  // larger than the limit itself
  EXPECT_EQ(admit(HookId::cudaMalloc, 41, ~uint64_t(0)).refused, DumpReason::kLimit);  // no overflow
  EXPECT_EQ(device_live_bytes(41), 0u);
}

TEST(Admit, ReservationSettlesToTheBytesHeld) {
  LimitScope scope(42, 1000);
  Admission a = admit(HookId::cudaMallocPitch, 42, 100);
  ASSERT_EQ(a.reserved, 100u);
  // A pitched allocation holds more than it asked for.
  record_alloc(HookId::cudaMallocPitch, 42, 0x420000, 128, 0, MemoryType::kDevice, 0, 0, a.reserved);
  EXPECT_EQ(device_live_bytes(42), 128u);
  PendingFree p = begin_free(0x420000, MemoryType::kDevice);
  end_free(HookId::cudaFree, p, 0x420000, -1, 0, MemoryType::kDevice, 0, 0);
  EXPECT_EQ(device_live_bytes(42), 0u);
  // A success that holds nothing (size 0 returns NULL) gives the bytes back.
  Admission z = admit(HookId::cudaMalloc, 42, 10);
  record_alloc(HookId::cudaMalloc, 42, 0, 10, 0, MemoryType::kDevice, 0, 0, z.reserved);
  EXPECT_EQ(device_live_bytes(42), 0u);
}

TEST(Admit, ManyThreadsNeverExceedTheLimit) {
  constexpr uint64_t kLimit = 1000, kSize = 100;
  LimitScope scope(43, kLimit);
  std::atomic<int> inside{0}, violations{0}, admitted{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        Admission a = admit(HookId::cudaMalloc, 43, kSize);
        if (a.refused != DumpReason::kNone) {
          ++refused;
          continue;
        }
        ++admitted;
        if (uint64_t(inside.fetch_add(1) + 1) * kSize > kLimit) ++violations;
        std::this_thread::yield();
        inside.fetch_sub(1);
        release(43, kSize, a.reserved);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(admitted.load(), 0);
  EXPECT_EQ(device_live_bytes(43), 0u);
}

TEST(Admit, FailAfterRefusesTheNthCall) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  const uint64_t saved = r->cfg.fail_after;
  r->cfg.fail_after = r->alloc_calls.load() + 2;
  EXPECT_EQ(admit(HookId::cudaMalloc, 44, 1).refused, DumpReason::kNone);
  EXPECT_EQ(admit(HookId::cudaMalloc, 44, 1).refused, DumpReason::kFailAfter);
  EXPECT_EQ(admit(HookId::cudaMalloc, 44, 1).refused, DumpReason::kNone);  // once only
  r->cfg.fail_after = saved;
}
