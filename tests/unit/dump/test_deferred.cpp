// The records of failures that found both frozen sets taken
// (shim/dump/capture/deferred.h): slots, replacement of recovered episodes, the
// writer's take/requeue/done, and failing threads racing the writer.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "shim/dump/capture/deferred.h"

using namespace gpumemrec;

namespace {

DeferredFailure record(uint64_t episode) {
  DeferredFailure d;
  d.episode = episode;
  d.failure.size = episode * 4096;
  d.devices.devices.resize(2);  // a copy that allocates, as the real one
  return d;
}

std::atomic<uint64_t> g_recovered_below{0};  // episodes below this one recovered
bool recovered(uint64_t episode) { return episode < g_recovered_below.load(); }
bool never(uint64_t) { return false; }

}  // namespace

TEST(DeferredFailures, FillsFreeSlotsThenRefuses) {
  DeferredFailures q;
  std::set<int> slots;
  for (uint64_t e = 1; e <= DeferredFailures::kSlots; ++e) {
    const auto p = q.put(record(e), never);
    ASSERT_GE(p.slot, 0);
    EXPECT_FALSE(p.replaced);
    slots.insert(p.slot);
  }
  EXPECT_EQ(slots.size(), size_t(DeferredFailures::kSlots));
  EXPECT_EQ(q.put(record(99), never).slot, -1);    // nothing may give way
  EXPECT_EQ(q.put(record(99), nullptr).slot, -1);  // no rule: nothing replaced
}

TEST(DeferredFailures, ReplacesOnlyARecoveredEpisode) {
  DeferredFailures q;
  for (uint64_t e = 1; e <= DeferredFailures::kSlots; ++e) q.put(record(e), never);
  g_recovered_below = 3;  // episodes 1 and 2 recovered
  const auto p = q.put(record(10), recovered);
  ASSERT_GE(p.slot, 0);
  EXPECT_TRUE(p.replaced);
  EXPECT_TRUE(p.evicted == 1 || p.evicted == 2);
  const DeferredFailure* d = q.take(p.slot);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->episode, 10u);  // the job already posted for the slot runs the new record
  EXPECT_EQ(d->failure.size, 10u * 4096);
  EXPECT_EQ(d->devices.devices.size(), 2u);
  q.done(p.slot);
  const auto again = q.put(record(11), recovered);
  EXPECT_FALSE(again.replaced);  // the slot just freed
  EXPECT_EQ(again.slot, p.slot);
  g_recovered_below = 0;
}

TEST(DeferredFailures, ARunningRecordIsNeverReplaced) {
  DeferredFailures q;
  for (uint64_t e = 1; e <= DeferredFailures::kSlots; ++e) q.put(record(e), never);
  std::vector<const DeferredFailure*> taken;
  for (int i = 0; i < DeferredFailures::kSlots; ++i) taken.push_back(q.take(i));
  g_recovered_below = 1000;
  EXPECT_EQ(q.put(record(50), recovered).slot, -1);
  for (int i = 0; i < DeferredFailures::kSlots; ++i) EXPECT_LE(taken[i]->episode, uint64_t(DeferredFailures::kSlots));
  q.requeue(0);  // back to queued: now it may give way
  const auto p = q.put(record(51), recovered);
  EXPECT_EQ(p.slot, 0);
  EXPECT_TRUE(p.replaced);
  EXPECT_EQ(q.take(0)->requeued, 0u);  // a new record starts its own count
  g_recovered_below = 0;
}

TEST(DeferredFailures, TakeOfAnEmptySlotIsNull) {
  DeferredFailures q;
  EXPECT_EQ(q.take(0), nullptr);
  q.put(record(1), never);
  q.reset();  // a forked child
  EXPECT_EQ(q.take(0), nullptr);
}

// Failing threads put and replace while a writer takes, requeues and frees:
// every record the writer runs is whole (its fields agree), no put is lost
// without being refused or replaced, and the slots end free.
TEST(DeferredFailures, FailingThreadsRaceTheWriter) {
  DeferredFailures q;
  constexpr int kThreads = 4, kPuts = 3000;
  std::atomic<uint64_t> next{1}, accepted{0}, refused{0}, evicted{0}, ran{0};
  std::atomic<bool> stop{false};
  std::atomic<int> posts[DeferredFailures::kSlots] = {};  // the writer's queue, per slot
  g_recovered_below = ~uint64_t(0) >> 1;  // every episode may give way
  std::thread writer([&] {
    while (!stop.load() || [&] {
      for (auto& p : posts) if (p.load()) return true;
      return false;
    }()) {
      for (int i = 0; i < DeferredFailures::kSlots; ++i) {
        if (posts[i].load() == 0) continue;
        DeferredFailure* d = q.take(i);
        ASSERT_NE(d, nullptr);
        EXPECT_EQ(d->failure.size, d->episode * 4096);
        EXPECT_EQ(d->devices.devices.size(), 2u);
        if (d->requeued == 0 && d->episode % 3 == 0) {
          q.requeue(i);  // stays posted
          continue;
        }
        ran++;
        posts[i].fetch_sub(1);
        q.done(i);
      }
    }
  });
  std::vector<std::thread> failing;
  for (int t = 0; t < kThreads; ++t)
    failing.emplace_back([&] {
      for (int i = 0; i < kPuts; ++i) {
        const auto p = q.put(record(next.fetch_add(1)), recovered);
        if (p.slot < 0) {
          refused++;
        } else if (p.replaced) {
          evicted++;
        } else {
          accepted++;
          posts[p.slot].fetch_add(1);
        }
      }
    });
  for (auto& t : failing) t.join();
  stop = true;
  writer.join();
  EXPECT_EQ(accepted + refused + evicted, uint64_t(kThreads) * kPuts);
  EXPECT_EQ(ran.load(), accepted.load());  // one run per post; a replacement rides an existing post
  for (int i = 0; i < DeferredFailures::kSlots; ++i) {
    EXPECT_EQ(posts[i].load(), 0);
    EXPECT_EQ(q.take(i), nullptr);  // free
  }
  g_recovered_below = 0;
}
