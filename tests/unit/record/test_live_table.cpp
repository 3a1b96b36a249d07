#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "shim/record/live_table.h"

using namespace gpumemrec;

namespace {
// `size` doubles as the allocation's time: a later entry is a newer
// allocation (where two entries of one key meet, the newer wins).
LiveEntry entry(uint64_t key, uint64_t size) {
  LiveEntry e;
  e.key = key;
  e.size = size;
  e.time_ns = size;
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
      // The driver hands out an address again only after its free.
      if (model.count(key)) {
        ASSERT_TRUE(t.remove(key, nullptr));
      }
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
      case 1:  // freed and handed out again
        ASSERT_EQ(t.remove(other, nullptr), model.count(other) == 1);
        ASSERT_TRUE(t.insert(entry(other, i + 1)));
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

// The homes (live_table.h). One thread's thousands of live entries stay in
// its home, each findable as the home grows, and leave in any order.
TEST(LiveTable, OneThreadsManyLiveEntriesStayFindable) {
  LiveTable t;
  constexpr uint64_t n = 5000;
  for (uint64_t i = 1; i <= n; ++i) {
    ASSERT_TRUE(t.insert(entry(i << 20, i)));
    if ((i & (i - 1)) != 0) continue;
    for (uint64_t j = 1; j <= i; ++j) ASSERT_TRUE(t.find(j << 20, nullptr)) << i << " " << j;
  }
  EXPECT_EQ(t.count(), n);
  std::vector<LiveEntry> snap;
  t.snapshot(&snap);
  EXPECT_EQ(snap.size(), n);
  for (uint64_t i = n; i >= 1; --i) {
    LiveEntry e;
    ASSERT_TRUE(t.remove(i << 20, &e));
    EXPECT_EQ(e.size, i);
  }
  EXPECT_EQ(t.count(), 0u);
}

// A free on another thread than the allocation's finds the entry in the
// allocating thread's home, and removes it from there.
TEST(LiveTable, AnotherThreadFreesAnEntry) {
  LiveTable t;
  std::thread([&] {
    for (uint64_t i = 1; i <= 600; ++i) ASSERT_TRUE(t.insert(entry(i << 12, i)));
  }).join();
  LiveEntry e;
  ASSERT_TRUE(t.find(0x5000, &e));
  EXPECT_EQ(e.size, 5u);
  for (uint64_t i = 1; i <= 600; ++i) ASSERT_TRUE(t.remove(i << 12, &e)) << i;
  EXPECT_FALSE(t.find(0x5000, &e));
  EXPECT_FALSE(t.remove(0x5000, &e));  // double free
  EXPECT_EQ(t.count(), 0u);
}

// Many threads allocate while one frees everything they hand it: frees race
// with the allocating threads' inserts and their homes' growth, and must
// find every entry exactly once.
TEST(LiveTable, CrossThreadFreesRaceWithGrowth) {
  LiveTable t;
  constexpr int kThreads = 6, kKeys = 30000;
  std::atomic<uint64_t> handed[kThreads * 64] = {};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> freed{0}, missed{0};
  std::thread freer([&] {
    uint64_t next[kThreads] = {};
    while (true) {
      bool all = done.load();
      bool progress = false;
      for (int k = 0; k < kThreads; ++k) {
        const uint64_t upto = handed[k * 64].load(std::memory_order_acquire);
        for (; next[k] < upto; ++next[k], progress = true) {
          const uint64_t key = ((next[k] + 1) << 16) | (uint64_t(k + 1) << 4);
          if (t.remove(key, nullptr)) freed.fetch_add(1);
          else missed.fetch_add(1);
        }
      }
      if (all && !progress) break;
    }
  });
  std::vector<std::thread> th;
  for (int k = 0; k < kThreads; ++k)
    th.emplace_back([&, k] {
      for (uint64_t i = 0; i < kKeys; ++i) {
        ASSERT_TRUE(t.insert(entry(((i + 1) << 16) | (uint64_t(k + 1) << 4), i + 1)));
        handed[k * 64].store(i + 1, std::memory_order_release);
      }
    });
  for (auto& x : th) x.join();
  done.store(true);
  freer.join();
  EXPECT_EQ(missed.load(), 0u);
  EXPECT_EQ(freed.load(), uint64_t(kThreads) * kKeys);
  EXPECT_EQ(t.count(), 0u);
}

// One thread's home grows from empty to 200k entries (every doubling moved
// over incrementally) while three others look up and free, in it, entries
// it has published: each published entry is found once, with its size.
TEST(LiveTable, GrowthUnderConcurrentLookups) {
  LiveTable t;
  constexpr uint64_t kKeys = 200000;
  std::atomic<uint64_t> published{0};
  std::atomic<uint64_t> bad{0}, freed{0};
  std::vector<std::thread> readers;
  for (int k = 0; k < 3; ++k)
    readers.emplace_back([&, k] {
      uint64_t next = uint64_t(k);  // reader k frees the keys i with i % 4 == k
      std::mt19937_64 rng(k);
      while (next < kKeys) {
        const uint64_t upto = published.load(std::memory_order_acquire);
        if (upto == 0) continue;
        LiveEntry e;
        const uint64_t any = rng() % upto;  // still live unless i % 4 < 3 and freed
        if (any % 4 == 3 && (!t.find((any + 1) << 9, &e) || e.size != any + 1)) bad.fetch_add(1);
        for (; next < upto; next += 4) {
          if (!t.remove((next + 1) << 9, &e) || e.size != next + 1) bad.fetch_add(1);
          else freed.fetch_add(1);
        }
      }
    });
  for (uint64_t i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(t.insert(entry((i + 1) << 9, i + 1)));
    published.store(i + 1, std::memory_order_release);
  }
  for (auto& x : readers) x.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_EQ(freed.load(), kKeys / 4 * 3);
  EXPECT_EQ(t.count(), kKeys / 4);
}

// More threads than homes (the later ones share, round robin), each with
// 500 live entries, each freeing half of its own and half of a neighbour's:
// nothing lost, nothing left, however the homes are shared.
TEST(LiveTable, MoreThreadsThanHomes) {
  LiveTable t;
  constexpr int kThreads = LiveTable::kHomes + 16;
  constexpr uint64_t kLive = 500;
  auto key = [](int k, uint64_t i) { return (i << 24) | (uint64_t(k + 1) << 8); };
  std::atomic<int> inserted{0};
  std::atomic<uint64_t> missed{0};
  std::vector<std::thread> th;
  for (int k = 0; k < kThreads; ++k)
    th.emplace_back([&, k] {
      for (uint64_t i = 1; i <= kLive; ++i) t.insert(entry(key(k, i), i));
      inserted.fetch_add(1);
      while (inserted.load() < kThreads) std::this_thread::yield();
      const int other = (k + 1) % kThreads;
      for (uint64_t i = 1; i <= kLive; ++i) {
        if (i % 2 == 0 && !t.remove(key(k, i), nullptr)) missed.fetch_add(1);      // its own
        if (i % 2 == 1 && !t.remove(key(other, i), nullptr)) missed.fetch_add(1);  // the neighbour's
      }
    });
  for (auto& x : th) x.join();
  EXPECT_EQ(missed.load(), 0u);
  EXPECT_EQ(t.count(), 0u);
  std::vector<LiveEntry> snap;
  t.snapshot(&snap);
  EXPECT_TRUE(snap.empty());
}

// A snapshot taken while threads allocate and free (late: each free 300
// allocations after its allocation, some on another thread, and addresses
// handed from one thread to another as a caching allocator's are) lists
// each key at most once, and every entry that no thread touches.
TEST(LiveTable, SnapshotDuringChurnListsEachKeyOnce) {
  LiveTable t;
  constexpr uint64_t kStill = 5000;
  for (uint64_t i = 1; i <= kStill; ++i) t.insert(entry(i << 24, i));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> clock{kStill + 1};  // allocation times, increasing over all threads
  std::vector<std::thread> th;
  for (int k = 0; k < 3; ++k)
    th.emplace_back([&, k] {
      // Each thread cycles through the same 600 addresses from its own
      // offset: a key freed by one is soon allocated by another (a reuse
      // across homes), and two can race on one key (both keep it).
      for (uint64_t i = 1; !stop.load(); ++i) {
        const uint64_t key = (((i + uint64_t(k) * 200) % 600) + 1) << 12;
        t.remove(key, nullptr);  // whoever holds it: the driver reuses it after a free
        t.insert(entry(key, clock.fetch_add(1)));
      }
    });
  for (int round = 0; round < 40; ++round) {
    std::vector<LiveEntry> snap;
    t.snapshot(&snap);
    std::set<uint64_t> seen;
    uint64_t still = 0;
    for (auto& e : snap) {
      ASSERT_TRUE(seen.insert(e.key).second) << "key twice in the snapshot: " << e.key;
      if ((e.key & 0xffffff) == 0) ++still;
    }
    ASSERT_EQ(still, kStill);
  }
  stop.store(true);
  for (auto& x : th) x.join();
}

// A free we never saw (the driver hands the address out again while it is
// still listed). On one thread (one home) the newer allocation replaces
// the older at once. Across homes both stay listed: a snapshot lists the
// newer once, and a free removes the one in the freeing thread's home
// first. What this design gives up against one table (a product
// decision, docs/design.md "Live table"): when that is the newer, the
// older is listed again until its own key is freed once more.
TEST(LiveTable, MissedFreeOnOneThreadReplaces) {
  LiveTable t;
  ASSERT_TRUE(t.insert(entry(0xA000, 1)));
  for (uint64_t i = 1; i <= 100; ++i) t.insert(entry(i << 30, 10 + i));
  ASSERT_TRUE(t.insert(entry(0xA000, 500)));  // handed out again: the free was missed
  EXPECT_EQ(t.count(), 101u);
  LiveEntry e;
  ASSERT_TRUE(t.remove(0xA000, &e));
  EXPECT_EQ(e.size, 500u);
  EXPECT_FALSE(t.find(0xA000, &e));
}

TEST(LiveTable, MissedFreeAcrossHomesSnapshotKeepsTheNewer) {
  LiveTable t;
  // Four threads, each started after the previous one's first insert, so
  // each picks the next home (round robin): four different homes.
  std::thread([&] {
    for (uint64_t i = 1; i <= 1000; ++i) t.insert(entry(i << 30, i));  // the fullest home
    t.insert(entry(0xB000, 5000));
    std::thread([&] { t.insert(entry(0xB000, 6000)); }).join();    // newer, in a smaller home
    std::thread([&] { t.insert(entry(0xB000, 5500)); }).join();    // in between, in a third
    std::thread([&] { t.insert(entry(uint64_t(7) << 30, 7000)); }).join();  // newer than the fullest home's
    std::vector<LiveEntry> snap;
    t.snapshot(&snap);
    ASSERT_EQ(snap.size(), 1001u);
    std::unordered_map<uint64_t, uint64_t> got;
    for (auto& e : snap) ASSERT_TRUE(got.emplace(e.key, e.size).second) << e.key;
    EXPECT_EQ(got[0xB000], 6000u);
    EXPECT_EQ(got[uint64_t(7) << 30], 7000u);
    EXPECT_EQ(got[uint64_t(8) << 30], 8u);
    // This thread frees 0xB000: its own home's entry (the oldest) goes first.
    LiveEntry e;
    ASSERT_TRUE(t.remove(0xB000, &e));
    EXPECT_EQ(e.size, 5000u);
    ASSERT_TRUE(t.remove(0xB000, &e));  // then the other homes' (the older stays listed meanwhile)
    ASSERT_TRUE(t.remove(0xB000, &e));
    EXPECT_FALSE(t.find(0xB000, &e));
  }).join();
}

// snapshot_into says when the entries do not fit, whichever home is short.
TEST(LiveTable, SnapshotIntoTooSmallAcrossHomes) {
  LiveTable t;
  for (uint64_t i = 1; i <= 300; ++i) t.insert(entry(i << 12, i));
  std::thread([&] {
    for (uint64_t i = 1; i <= 200; ++i) t.insert(entry((i << 12) | 0x100, i));
  }).join();
  std::vector<LiveEntry> out(500);
  EXPECT_EQ(t.snapshot_into(out.data(), 499), UINT64_MAX);
  EXPECT_EQ(t.snapshot_into(out.data(), 500), 500u);
}

// fork while other threads are inside the table (the recorder's atfork
// handlers: lock_all before, unlock_all in both after): the child's only
// thread can insert, free and take a snapshot, so no home or the snapshot
// lock was left held by a thread that does not exist there. A lock
// left out of lock_all hangs the child (the test's timeout).
// The child allocates nothing: a fork taken while another thread is inside
// malloc leaves that allocator's lock held in the child. glibc's malloc
// takes its arenas' locks around fork; GCC 12's AddressSanitizer allocator
// does not (Debian 12's libasan.so.8 imports no __register_atfork, its
// libtsan does), and a child that called malloc hung in CI's ASan run. The
// shim's freeze does not call malloc either (snapshot_into).
TEST(LiveTable, ForkWhileThreadsRecordLeavesAUsableTable) {
  LiveTable t;
  std::vector<LiveEntry> child_snap(1 << 14);  // written by the children only
  int bad_round = -1, bad_status = 0;
  std::atomic<bool> stop{false};
  std::vector<std::thread> th;
  for (int k = 0; k < 4; ++k)
    th.emplace_back([&, k] {
      for (uint64_t i = 1; !stop.load(std::memory_order_relaxed); ++i) {
        const uint64_t key = (i << 12) | (uint64_t(k + 1) << 4);
        t.insert(entry(key, i));
        if (i > 20) t.remove(((i - 20) << 12) | (uint64_t((k + 1) % 4 + 1) << 4), nullptr);  // others' too
        if (i > 40) t.remove(((i - 40) << 12) | (uint64_t(k + 1) << 4), nullptr);  // what no other freed
        if (i % 97 == 0) {
          std::vector<LiveEntry> snap;
          t.snapshot(&snap);
        }
      }
    });
  for (int round = 0; round < 40; ++round) {
    t.lock_all();
    const pid_t pid = fork();
    if (pid == 0) {
      t.unlock_all();
      for (uint64_t i = 1; i <= 200; ++i) t.insert(entry((i << 40) | 8, i));
      const uint64_t n = t.snapshot_into(child_snap.data(), child_snap.size());
      if (n > child_snap.size()) _exit(4);
      uint64_t mine = 0;
      for (uint64_t j = 0; j < n; ++j) mine += (child_snap[j].key & 0xff) == 8;
      for (uint64_t i = 1; i <= 200; ++i)
        if (!t.remove((i << 40) | 8, nullptr)) _exit(2);
      _exit(mine == 200 ? 0 : 3);
    }
    t.unlock_all();
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      bad_round = round, bad_status = status;
      break;
    }
  }
  stop.store(true);
  for (auto& x : th) x.join();
  EXPECT_EQ(bad_round, -1) << "child status " << bad_status;
}
