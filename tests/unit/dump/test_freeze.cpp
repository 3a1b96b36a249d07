// The freeze (shim/dump/capture/freeze.h): the live table copied without
// allocating, and the frozen sets handed out one per bundle in the works.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "shim/dump/capture/freeze.h"
#include "shim/record/live_table.h"
#include "shim/record/recorder.h"

using namespace gpumemrec;

namespace {

LiveEntry entry(uint64_t key) {
  LiveEntry e;
  e.key = key;
  e.size = key * 2;
  e.device = 0;
  return e;
}

}  // namespace

TEST(Freeze, SnapshotIntoCopiesEveryEntryOrSaysItDoesNotFit) {
  LiveTable t;
  for (uint64_t k = 1; k <= 5000; ++k) ASSERT_TRUE(t.insert(entry(k * 4096)));
  for (uint64_t k = 1; k <= 5000; k += 2) ASSERT_TRUE(t.remove(k * 4096, nullptr));
  std::vector<LiveEntry> out(2500);
  EXPECT_EQ(t.snapshot_into(out.data(), 2499), UINT64_MAX);  // one short
  ASSERT_EQ(t.snapshot_into(out.data(), out.size()), 2500u);
  std::vector<uint64_t> keys;
  for (const LiveEntry& e : out) {
    EXPECT_EQ(e.size, e.key / 4096 * 2 * 4096);
    keys.push_back(e.key / 4096);
  }
  std::sort(keys.begin(), keys.end());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(keys[i], 2 * (i + 1));  // exactly the even ones
}

TEST(Freeze, TwoPooledSetsThenNone) {
  ASSERT_NE(recorder(), nullptr);  // the shim's start-up reserved the sets
  std::vector<int> got;
  for (int i = 0; i < kPooledSets + 1; ++i) got.push_back(freeze_acquire());
  EXPECT_NE(got[0], -1);
  EXPECT_NE(got[1], -1);
  EXPECT_NE(got[0], got[1]);
  EXPECT_EQ(got[2], -1);  // both in the works: the failure goes without a bundle
  EXPECT_NE(got[0], kInlineSet);
  EXPECT_NE(got[1], kInlineSet);
  freeze_done(got[1]);
  EXPECT_EQ(freeze_acquire(), got[1]);
  freeze_done(got[0]);
  freeze_done(got[1]);
}

TEST(Freeze, CopiesTheRingAndTheLiveTables) {
  Recorder* r = recorder();
  ASSERT_NE(r, nullptr);
  const uint64_t t0 = 1;
  record_alloc(HookId::cudaMalloc, 0, 0x5f0000001000, 4096, 0, MemoryType::kDevice, t0, 0);
  const int set = freeze_acquire();
  ASSERT_GE(set, 0);
  FrozenState f;
  const char* why = "";
  ASSERT_TRUE(freeze(r, set, &f, &why)) << why;
  EXPECT_EQ(f.end_seq, r->ring.end());
  ASSERT_GT(f.event_count, 0u);
  EXPECT_EQ(f.events[f.event_count - 1].address, 0x5f0000001000u);  // the newest event
  bool found = false;
  for (uint64_t i = 0; i < f.live_count; ++i) found = found || f.live[i].key == 0x5f0000001000u;
  EXPECT_TRUE(found);
  freeze_done(set);
  PendingFree p = begin_free(0x5f0000001000, MemoryType::kDevice);
  end_free(HookId::cudaFree, p, 0x5f0000001000, -1, 0, MemoryType::kDevice, t0, 0);
}
