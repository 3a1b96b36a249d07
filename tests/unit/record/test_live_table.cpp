#include <gtest/gtest.h>

#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "shim/record/live_table.h"

using namespace gpumemrec;

namespace {
LiveEntry entry(uint64_t key, uint64_t size) {
  LiveEntry e;
  e.key = key;
  e.size = size;
  e.device = 0;
  return e;
}
}  // namespace

TEST(LiveTable, InsertFindRemove) {
  LiveTable t;
  EXPECT_TRUE(t.insert(entry(0x1000, 10)));
  EXPECT_TRUE(t.insert(entry(0x2000, 20)));
  LiveEntry e;
  ASSERT_TRUE(t.find(0x1000, &e));
  EXPECT_EQ(e.size, 10u);
  EXPECT_EQ(t.count(), 2u);
  ASSERT_TRUE(t.remove(0x1000, &e));
  EXPECT_EQ(e.size, 10u);
  EXPECT_FALSE(t.remove(0x1000, &e));  // double free
  EXPECT_FALSE(t.find(0x1000, &e));
  EXPECT_FALSE(t.remove(0xdead, &e));  // unknown
  EXPECT_FALSE(t.remove(0, &e));
  EXPECT_EQ(t.count(), 1u);
}

TEST(LiveTable, ReinsertReplaces) {
  LiveTable t;
  t.insert(entry(0x1000, 10));
  t.insert(entry(0x1000, 30));
  LiveEntry e;
  ASSERT_TRUE(t.find(0x1000, &e));
  EXPECT_EQ(e.size, 30u);
  EXPECT_EQ(t.count(), 1u);
}

TEST(LiveTable, GrowsAndSurvivesChurn) {
  LiveTable t;
  std::unordered_map<uint64_t, uint64_t> model;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200000; ++i) {
    uint64_t key = (rng() % 50000 + 1) * 256;
    if (rng() % 2) {
      t.insert(entry(key, i));
      model[key] = uint64_t(i);
    } else {
      LiveEntry e;
      bool had = model.erase(key) > 0;
      EXPECT_EQ(t.remove(key, &e), had);
    }
  }
  EXPECT_EQ(t.count(), model.size());
  std::vector<LiveEntry> snap;
  t.snapshot(&snap);
  ASSERT_EQ(snap.size(), model.size());
  for (auto& e : snap) EXPECT_EQ(model.at(e.key), e.size);
}

TEST(LiveTable, ConcurrentDisjointThreads) {
  LiveTable t;
  constexpr int kThreads = 8, kOps = 20000;
  std::vector<std::thread> th;
  for (int k = 0; k < kThreads; ++k)
    th.emplace_back([&, k] {
      for (int i = 1; i <= kOps; ++i) {
        uint64_t key = (uint64_t(k) << 40) | (uint64_t(i) << 8);
        t.insert(entry(key, 1));
        if (i % 2 == 0) t.remove(key, nullptr);
      }
    });
  for (auto& x : th) x.join();
  EXPECT_EQ(t.count(), uint64_t(kThreads * kOps / 2));
}
