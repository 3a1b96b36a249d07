#include <gtest/gtest.h>

#include <algorithm>
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

namespace {
// Every key of the model is found with its size, and the snapshot holds each
// key exactly once (no copy left behind in a table being moved out).
void expect_same(LiveTable& t, const std::unordered_map<uint64_t, uint64_t>& model) {
  ASSERT_EQ(t.count(), model.size());
  std::vector<LiveEntry> snap;
  t.snapshot(&snap);
  ASSERT_EQ(snap.size(), model.size());
  std::set<uint64_t> seen;
  for (auto& e : snap) {
    EXPECT_TRUE(seen.insert(e.key).second) << "key twice in the snapshot: " << e.key;
    auto it = model.find(e.key);
    ASSERT_NE(it, model.end());
    EXPECT_EQ(it->second, e.size);
  }
  for (auto& [k, v] : model) {
    LiveEntry e;
    ASSERT_TRUE(t.find(k, &e)) << k;
    EXPECT_EQ(e.size, v);
  }
}
}  // namespace

// Deletion must not leave anything behind that breaks a later probe: a long
// run of deletes in clustered keys (every entry of a probe chain removed in
// every order) checked against a model after each phase.
TEST(LiveTable, ChurnWithManyDeletes) {
  LiveTable t;
  std::unordered_map<uint64_t, uint64_t> model;
  std::mt19937_64 rng(7);
  std::vector<uint64_t> keys;
  for (uint64_t round = 0; round < 20; ++round) {
    for (int i = 0; i < 5000; ++i) {
      uint64_t key = (round * 100000 + uint64_t(i) + 1) * 512;
      ASSERT_TRUE(t.insert(entry(key, key + round)));
      model[key] = key + round;
      keys.push_back(key);
    }
    std::shuffle(keys.begin(), keys.end(), rng);
    size_t drop = keys.size() * 9 / 10;  // delete 90% of what is live
    for (size_t i = 0; i < drop; ++i) {
      LiveEntry e;
      ASSERT_TRUE(t.remove(keys[i], &e));
      EXPECT_EQ(e.size, model[keys[i]]);
      model.erase(keys[i]);
      EXPECT_FALSE(t.find(keys[i], &e));
    }
    keys.erase(keys.begin(), keys.begin() + static_cast<long>(drop));
    expect_same(t, model);
  }
}

// The same address freed and handed out again, many times (a caching
// allocator's pattern): one entry, the newest one.
TEST(LiveTable, ReinsertSameKeyAfterRemove) {
  LiveTable t;
  for (int i = 0; i < 1000; ++i) t.insert(entry(uint64_t(i + 1) << 12, 1));  // neighbours in the probe chains
  for (uint64_t round = 1; round <= 100000; ++round) {
    ASSERT_TRUE(t.insert(entry(0x7f0000001000, round)));
    LiveEntry e;
    ASSERT_TRUE(t.remove(0x7f0000001000, &e));
    ASSERT_EQ(e.size, round);
    ASSERT_FALSE(t.find(0x7f0000001000, &e));
  }
  t.insert(entry(0x7f0000001000, 5));
  t.insert(entry(0x7f0000001000, 6));  // replaces, does not add
  EXPECT_EQ(t.count(), 1001u);
  LiveEntry e;
  ASSERT_TRUE(t.find(0x7f0000001000, &e));
  EXPECT_EQ(e.size, 6u);
}

// Growth is incremental: while shards are moving their entries over, every
// operation (find, replace, remove of an entry not moved yet, snapshot) sees
// each key exactly once. Checked after every step of a growth to 300k.
TEST(LiveTable, GrowthKeepsEveryEntryVisible) {
  LiveTable t;
  std::unordered_map<uint64_t, uint64_t> model;
  std::mt19937_64 rng(3);
  for (uint64_t i = 1; i <= 120000; ++i) {
    uint64_t key = i * 4096;
    ASSERT_TRUE(t.insert(entry(key, i)));
    model[key] = i;
    uint64_t other = (rng() % i + 1) * 4096;  // often still in an old table
    switch (rng() % 4) {
      case 0: {
        LiveEntry e;
        bool had = model.erase(other) > 0;
        ASSERT_EQ(t.remove(other, &e), had);
        break;
      }
      case 1:
        ASSERT_TRUE(t.insert(entry(other, i + 1)));  // reinsertion / replacement
        model[other] = i + 1;
        break;
      default: break;
    }
    if ((i < 4096 && (i & (i - 1)) == 0) || i % 10007 == 0) expect_same(t, model);
  }
  expect_same(t, model);
}

// Keys the table cannot hold are refused, not stored as an empty slot.
TEST(LiveTable, RefusesReservedKeys) {
  LiveTable t;
  EXPECT_FALSE(t.insert(entry(0, 1)));
  EXPECT_FALSE(t.insert(entry(~uint64_t(0), 1)));
  EXPECT_EQ(t.count(), 0u);
  EXPECT_FALSE(t.find(~uint64_t(0), nullptr));
}

// Many threads on the same shards while they grow: counts add up and every
// survivor is found.
TEST(LiveTable, ConcurrentGrowthAndChurn) {
  LiveTable t;
  constexpr int kThreads = 4, kKeys = 50000;
  std::vector<std::thread> th;
  for (int k = 0; k < kThreads; ++k)
    th.emplace_back([&, k] {
      for (int i = 1; i <= kKeys; ++i) {
        uint64_t key = (uint64_t(i) << 12) | (uint64_t(k) << 4);
        t.insert(entry(key, uint64_t(k)));
        if (i % 3 == 0) t.remove((uint64_t(i - 1) << 12) | (uint64_t(k) << 4), nullptr);
      }
    });
  for (auto& x : th) x.join();
  uint64_t expected = 0;
  for (int k = 0; k < kThreads; ++k)
    for (int i = 1; i <= kKeys; ++i) {
      bool removed = (i + 1) % 3 == 0 && i + 1 <= kKeys;
      LiveEntry e;
      uint64_t key = (uint64_t(i) << 12) | (uint64_t(k) << 4);
      ASSERT_EQ(t.find(key, &e), !removed) << k << " " << i;
      if (!removed) {
        ++expected;
        EXPECT_EQ(e.size, uint64_t(k));
      }
    }
  EXPECT_EQ(t.count(), expected);
}
