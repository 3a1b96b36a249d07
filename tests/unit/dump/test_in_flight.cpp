// Allocations whose event was being written when the window was copied
// (shim/dump/capture/in_flight.h): rebuilt from their live entries, so that
// the history the bundle tells still adds up to its live set.
#include <gtest/gtest.h>

#include <vector>

#include "shim/dump/capture/dump_snapshot.h"
#include "shim/dump/capture/in_flight.h"

using namespace gpumemrec;

namespace {

Event alloc_event(uint64_t seq, uint64_t addr, uint64_t size, uint64_t time_ns) {
  Event e{};
  e.seq = seq;
  e.time_ns = time_ns;
  e.address = addr;
  e.size = size;
  e.device1 = 1;
  e.kind_type = pack_kind_type(EventKind::kAlloc, MemoryType::kDevice);
  return e;
}

LiveEntry entry_of(const Event& e) { return live_entry_from_event(e); }

WindowBounds window(uint64_t first, uint64_t end, uint64_t from = 0, uint64_t to = UINT64_MAX) {
  WindowBounds w;
  w.first_seq = first;
  w.end_seq = end;
  w.from_ns = from;
  w.to_ns = to;
  return w;
}

}  // namespace

// Thread 1 allocated 0x100 (seq 1) and freed it (seq 2, in flight: not in
// the window); thread 2 got 0x100 from the driver (seq 65: inserted in the
// live table, its event still being written). Without the rebuild the
// window's 0x100 allocation of 300 bytes never leaves and the base goes
// below zero: every total before it read 0. Through finish_snapshot, as a
// bundle's writer calls it: monotonic times, a wall offset, the window's
// bounds and room from the freeze.
TEST(InFlight, AnAllocationBeingWrittenIsRebuiltFromItsLiveEntry) {
  const Event b = alloc_event(65, 0x100, 40, 3000);
  std::vector<Event> ev = {alloc_event(1, 0x100, 300, 1000), alloc_event(3, 0x200, 10, 2000),
                           alloc_event(66, 0x300, 5, 4000)};
  std::vector<LiveEntry> live = {entry_of(b), entry_of(ev[1]), entry_of(ev[2])};
  ev.resize(128);  // the events region: the ring's capacity
  FrozenState f;
  f.events = ev.data();
  f.event_count = 3;
  f.event_room = ev.size();
  f.live = live.data();
  f.live_count = live.size();
  f.first_seq = 1;
  f.end_seq = 129;
  f.complete_from_ns = 500;
  f.cut_ns = 5000;
  f.wall_offset_ns = 1000000;
  DumpSnapshot s;
  finish_snapshot(f, nullptr, {}, &s);
  ASSERT_EQ(s.events.size(), 4u);
  const Event* e = s.events.data;
  EXPECT_EQ(e[2].seq, 65u);  // in time order
  EXPECT_EQ(e[2].time_ns, 1003000u);  // in wall time
  EXPECT_EQ(event_kind(e[2]), EventKind::kAlloc);
  EXPECT_EQ(e[2].size, 40u);
  EXPECT_EQ(e[0].live_after, 300u);
  EXPECT_EQ(e[1].live_after, 310u);
  EXPECT_EQ(e[2].live_after, 50u);  // 0x100's first 300 bytes left just before it
  EXPECT_EQ(e[3].live_after, 55u);
  EXPECT_EQ(s.live.size(), 3u);
  EXPECT_EQ(s.live_bytes, 55u);
  // Its time after the cut: the window need not hold it, nothing rebuilt.
  ev = {alloc_event(1, 0x100, 300, 1000), alloc_event(3, 0x200, 10, 2000), alloc_event(66, 0x300, 5, 4000)};
  ev.resize(128);
  f.events = ev.data();
  f.cut_ns = 2500;
  DumpSnapshot t;
  finish_snapshot(f, nullptr, {}, &t);
  EXPECT_EQ(t.events.size(), 2u);  // 66 is after the cut as well
}

// Live entries the window need not hold are not rebuilt: older than its
// first seq, not before the cut's seq, recorded before the moment it is
// complete from or after the cut, or a mapping.
TEST(InFlight, OnlyEntriesTheWindowMustHoldAreRebuilt) {
  std::vector<Event> ev = {alloc_event(100, 0x100, 8, 5000)};
  LiveEntry mapping = entry_of(alloc_event(101, 0x900, 8, 5100));
  mapping.memory_type = uint8_t(MemoryType::kMapping);
  const std::vector<LiveEntry> live = {entry_of(ev[0]),
                                       entry_of(alloc_event(99, 0x200, 8, 4900)),    // below the window
                                       entry_of(alloc_event(200, 0x300, 8, 5200)),   // the cut's seq
                                       entry_of(alloc_event(150, 0x400, 8, 1000)),   // before `from`
                                       entry_of(alloc_event(151, 0x500, 8, 9000)),   // after the cut
                                       mapping};
  std::vector<Event> out = ev;
  out.resize(16);
  EXPECT_EQ(add_in_flight_allocations(out.data(), 1, out.size(), live, window(100, 200, 2000, 8000)), 1u);
  // The same entries, a window that holds every one of them: all but the mapping.
  EXPECT_EQ(add_in_flight_allocations(out.data(), 1, out.size(), live, window(1, 300)), 5u);
}

// No room (a caller that reserved none): nothing is added.
TEST(InFlight, NoRoomNothingAdded) {
  std::vector<Event> ev = {alloc_event(1, 0x100, 8, 1000)};
  EXPECT_EQ(add_in_flight_allocations(ev.data(), 1, 1, {entry_of(alloc_event(2, 0x200, 8, 2000))}, window(1, 10)), 1u);
}
