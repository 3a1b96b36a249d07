// The reconciliation of the live tables' snapshot with the ring, and the one
// consistent history (running totals, timestamps) written to events.json.
#include <gtest/gtest.h>

#include <vector>

#include "shim/dump/capture/history.h"
#include "shim/dump/capture/reconciler.h"

using namespace gpumemrec;

namespace {

Event make_event(uint64_t seq, EventKind k, uint64_t addr, uint64_t size, int device = 0,
                 MemoryType t = MemoryType::kDevice, uint64_t time_ns = 0) {
  Event e{};
  e.seq = seq;
  e.time_ns = time_ns ? time_ns : 1000 * seq;
  e.address = addr;
  e.size = size;
  e.device1 = uint8_t(device + 1);
  e.kind_type = pack_kind_type(k, t);
  e.stack_id = uint32_t(seq);
  return e;
}

LiveEntry live(uint64_t key, uint64_t size, uint64_t seq, MemoryType t = MemoryType::kDevice, int device = 0) {
  LiveEntry a;
  a.key = key;
  a.size = size;
  a.seq = seq;
  a.device = int16_t(device);
  a.memory_type = uint8_t(t);
  return a;
}

// The reconciled live set: `live` replayed with `ring` (as finish_snapshot
// does: the ring given to the constructor, then each event applied).
std::vector<LiveEntry> reconcile(std::vector<LiveEntry> live, const std::vector<Event>& ring) {
  Reconciler r(std::move(live), ring.data(), ring.size());
  for (const Event& e : ring) r.apply(e);
  return r.finish();
}

std::vector<uint64_t> keys(const std::vector<LiveEntry>& v) {
  std::vector<uint64_t> out;
  for (auto& a : v) out.push_back(a.key);
  return out;
}

}  // namespace

TEST(Reconciler, KeepsTheSnapshotWhenTheRingAgrees) {
  const std::vector<Event> ring = {make_event(1, EventKind::kAlloc, 0x100, 10),
                                   make_event(2, EventKind::kAlloc, 0x200, 30)};
  EXPECT_EQ(keys(reconcile({live(0x100, 10, 1), live(0x200, 30, 2)}, ring)),
            (std::vector<uint64_t>{0x200, 0x100}));  // largest first
}

TEST(Reconciler, AddsAnAllocationTheSnapshotMissed) {
  const std::vector<Event> ring = {make_event(1, EventKind::kAlloc, 0x100, 10),
                                   make_event(2, EventKind::kAlloc, 0x300, 5)};  // 0x300: inserted after its shard was copied
  auto out = reconcile({live(0x100, 10, 1)}, ring);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].key, 0x300u);
  EXPECT_EQ(out[1].seq, 2u);
  EXPECT_EQ(out[1].stack_id, 2u);  // made from the event
}

TEST(Reconciler, DropsAnAllocationFreedInTheRing) {
  const std::vector<Event> ring = {
      make_event(3, EventKind::kFree, 0x100, 10)};
  EXPECT_EQ(keys(reconcile({live(0x100, 10, 1), live(0x200, 20, 2)}, ring)), (std::vector<uint64_t>{0x200}));
}

TEST(Reconciler, AFreeOlderThanTheListedAllocationKeepsIt) {
  // The address was freed (seq 3) and handed out again (seq 7, listed).
  const std::vector<Event> ring = {
      make_event(3, EventKind::kFree, 0x100, 10),
      make_event(7, EventKind::kAlloc, 0x100, 10)};
  auto out = reconcile({live(0x100, 10, 7)}, ring);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].seq, 7u);
}

TEST(Reconciler, AReallocationSupersedesAnOlderEntry) {
  // A missed free of seq 2; seq 9 re-allocates.
  const std::vector<Event> ring = {
      make_event(9, EventKind::kAlloc, 0x100, 64)};
  auto out = reconcile({live(0x100, 10, 2)}, ring);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].seq, 9u);
  EXPECT_EQ(out[0].size, 64u);
}

TEST(Reconciler, AllocatedAndFreedInTheRingIsNotListed) {
  const std::vector<Event> ring = {
      make_event(1, EventKind::kAlloc, 0x100, 10),
      make_event(2, EventKind::kFree, 0x100, 10)};
  EXPECT_TRUE(reconcile({}, ring).empty());
}

TEST(Reconciler, HandlesAndAddressesAreSeparateKeys) {
  const std::vector<Event> ring = {
      make_event(3, EventKind::kFree, 0x100, 99, 0, MemoryType::kPhysical)};
  auto out = reconcile({live(0x100, 10, 1), live(0x100, 99, 2, MemoryType::kPhysical)}, ring);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(MemoryType(out[0].memory_type), MemoryType::kDevice);
}

TEST(Reconciler, EntriesTheRingDoesNotNameStayAsTheyAre) {
  // Only the ring's addresses are indexed: the rest of a big snapshot is
  // kept untouched (and ordered with it), whatever its order on input.
  std::vector<LiveEntry> snapshot;
  for (uint64_t i = 0; i < 1000; ++i) snapshot.push_back(live(0x10000 + 0x100 * ((i * 7919) % 1000), 1 + i % 13, i + 1));
  const std::vector<Event> ring = {make_event(2000, EventKind::kFree, 0x10000, 1),
                                   make_event(2001, EventKind::kAlloc, 0x900000, 4096)};
  const auto out = reconcile(snapshot, ring);
  ASSERT_EQ(out.size(), 1000u);  // one freed, one added
  EXPECT_EQ(out[0].key, 0x900000u);
  for (const LiveEntry& a : out) EXPECT_NE(a.key, 0x10000u);
  for (size_t i = 1; i < out.size(); ++i)
    EXPECT_TRUE(out[i - 1].size > out[i].size || (out[i - 1].size == out[i].size && out[i - 1].seq < out[i].seq));
}

TEST(Reconciler, MappingsAndFailuresChangeNothing) {
  const std::vector<Event> ring = {
      make_event(2, EventKind::kUnmap, 0x100, 10, 0, MemoryType::kMapping),
      make_event(3, EventKind::kOom, 0, 1 << 30),
      make_event(4, EventKind::kFreeFailed, 0x100, 10)};
  EXPECT_EQ(keys(reconcile({live(0x100, 10, 1)}, ring)), (std::vector<uint64_t>{0x100}));
}

TEST(History, RunningTotalsReplayFromTheLiveSetAtTheCut) {
  // Before the ring: 0x100 (100 bytes) on device 0. In the ring: +50, +25
  // (device 1), -100, +10. Recorded totals are garbage (as a preempted
  // thread leaves them); the replay must end at the live set.
  std::vector<Event> ev = {make_event(1, EventKind::kAlloc, 0x200, 50), make_event(2, EventKind::kAlloc, 0x300, 25, 1),
                           make_event(3, EventKind::kFree, 0x100, 100), make_event(4, EventKind::kAlloc, 0x400, 10),
                           make_event(5, EventKind::kOom, 0, 1 << 20)};
  for (auto& e : ev) e.live_after = 999999;
  std::vector<LiveEntry> at_cut = {live(0x200, 50, 1), live(0x300, 25, 2, MemoryType::kDevice, 1), live(0x400, 10, 4)};
  make_history_consistent(&ev, at_cut);
  EXPECT_EQ(ev[0].live_after, 150u);
  EXPECT_EQ(ev[1].live_after, 25u);  // device 1
  EXPECT_EQ(ev[2].live_after, 50u);
  EXPECT_EQ(ev[3].live_after, 60u);
  EXPECT_EQ(ev[4].live_after, 60u);  // a failure changes nothing
}

TEST(History, MappingEventsCarryTheirDevicesTotal) {
  std::vector<Event> ev = {make_event(1, EventKind::kAlloc, 0xa, 64, 2, MemoryType::kPhysical),
                           make_event(2, EventKind::kMap, 0x7000, 64, 2, MemoryType::kMapping),
                           make_event(3, EventKind::kUnmap, 0x7000, 64, 2, MemoryType::kMapping)};
  make_history_consistent(&ev, {live(0xa, 64, 1, MemoryType::kPhysical, 2)});
  EXPECT_EQ(ev[1].live_after, 64u);
  EXPECT_EQ(ev[2].live_after, 64u);
}

// The failure CI-like load found: a thread frees 0x500 (its seq 3 claimed
// before the real free), is preempted before it publishes, and the driver
// hands 0x500 to another thread (seq 4). The window holds no free for the
// first allocation: a hole. Its bytes must leave the total no later than
// the re-allocation, or the base goes negative and every total before it
// reads 0.
TEST(History, AReallocationWithoutAFreeInTheWindowImpliesIt) {
  std::vector<Event> ev = {make_event(1, EventKind::kAlloc, 0x500, 300), make_event(2, EventKind::kAlloc, 0x600, 10),
                           /* seq 3, the free of 0x500: a hole */ make_event(4, EventKind::kAlloc, 0x500, 40),
                           make_event(5, EventKind::kFree, 0x600, 10)};
  make_history_consistent(&ev, {live(0x500, 40, 4)});
  EXPECT_EQ(ev[0].live_after, 300u);
  EXPECT_EQ(ev[1].live_after, 310u);
  EXPECT_EQ(ev[2].live_after, 50u);  // 310 - 300 (the implied free) + 40
  EXPECT_EQ(ev[3].live_after, 40u);  // what the live set holds
  // A VMM handle and a device address with the same number are two keys.
  std::vector<Event> two = {make_event(1, EventKind::kAlloc, 0x700, 8),
                            make_event(2, EventKind::kAlloc, 0x700, 16, 0, MemoryType::kPhysical)};
  make_history_consistent(&two, {live(0x700, 8, 1), live(0x700, 16, 2, MemoryType::kPhysical)});
  EXPECT_EQ(two[0].live_after, 8u);
  EXPECT_EQ(two[1].live_after, 24u);
}

// Blocks of seqs (ring.h): a thread can record an allocation at an address
// with a LOWER seq than another thread's earlier allocation there; the
// free between them was in flight when the window was copied, and neither
// allocation was in the live tables' copy. The later one in time wins, and
// the earlier one is not listed twice (both listed would count the bytes
// twice and give allocations.json two entries at one address).
TEST(Reconciler, AReallocationSupersedesAnEarlierOneOnlyTheWindowNamed) {
  const std::vector<Event> ring = {make_event(900, EventKind::kAlloc, 0x100, 10, 0, MemoryType::kDevice, 5000),
                                   make_event(450, EventKind::kAlloc, 0x100, 30, 0, MemoryType::kDevice, 6000)};
  auto out = reconcile({}, ring);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].seq, 450u);
  EXPECT_EQ(out[0].size, 30u);
}

// Order is time, then seq (event_order.h), not seq: a free with a higher
// seq but an earlier time than the re-allocation does not drop it.
TEST(Reconciler, TimeNotSeqDecidesWhetherAFreeFollowsAnAllocation) {
  const std::vector<Event> ring = {make_event(800, EventKind::kFree, 0x100, 10, 0, MemoryType::kDevice, 5000),
                                   make_event(300, EventKind::kAlloc, 0x100, 20, 0, MemoryType::kDevice, 6000)};
  auto out = reconcile({live(0x100, 10, 100)}, ring);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].seq, 300u);
}
