// The peak keeper (shim/dump/capture/peak_keeper.h): the replay's rules
// (peak_replay.h), the tail of a real ring in time order, and a bundle's
// finish (peak_finish.h).
#include <gtest/gtest.h>

#include <vector>

#include "shim/dump/capture/peak_finish.h"
#include "shim/dump/capture/peak_keeper.h"
#include "shim/dump/capture/peak_replay.h"
#include "tests/unit/dump/peak_events.h"

using namespace gpumemrec;

using namespace gpumemrec::peak_test;

namespace {

const DevicePeakState& dev(const PeakReplay& r, int d) { return r.devices().at(d); }

Sites sites(const DevicePeakState& d) { return sites_of(PeakReplay::sites_at_peak(d)); }

}  // namespace

TEST(PeakReplay, ThePeakAndItsSitesOnTheFallingEdge) {
  PeakReplay r;
  r.apply(alloc(1, 10, 0x1000, 100, 1));
  r.apply(alloc(2, 20, 0x2000, 200, 2));  // the peak: 300
  r.apply(free_of(3, 30, 0x1000, 100, 1));  // the falling edge
  r.apply(alloc(4, 40, 0x3000, 50, 3));
  r.apply(alloc(5, 50, 0x4000, 20, 1));  // stack 1 touched after the edge
  const DevicePeakState& d = dev(r, 0);
  EXPECT_EQ(d.peak, 300);
  EXPECT_EQ(d.peak_seq, 2u);
  EXPECT_EQ(d.peak_time_ns, 20u);
  EXPECT_EQ(d.current, 270);
  EXPECT_EQ(sites(d), (Sites{{2, 200}, {1, 100}}));
  EXPECT_EQ(d.events, 5u);
}

TEST(PeakReplay, ATieGoesToTheLatestMoment) {
  PeakReplay r;
  r.apply(alloc(1, 10, 0x1000, 100, 1));
  r.apply(free_of(2, 20, 0x1000, 100, 1));
  r.apply(alloc(3, 30, 0x2000, 60, 2));
  r.apply(alloc(4, 40, 0x3000, 40, 3));  // 100 again
  r.apply(free_of(5, 50, 0x2000, 60, 2));
  const DevicePeakState& d = dev(r, 0);
  EXPECT_EQ(d.peak, 100);
  EXPECT_EQ(d.peak_seq, 4u);
  EXPECT_EQ(sites(d), (Sites{{2, 60}, {3, 40}}));
}

TEST(PeakReplay, StillAtThePeakAtTheEndUsesTheSitesNow) {
  PeakReplay r;
  r.apply(alloc(1, 10, 0x1000, 100, 1));
  r.apply(free_of(2, 20, 0x1000, 100, 1));  // an edge at 100
  r.apply(alloc(3, 30, 0x2000, 70, 2));
  r.apply(alloc(4, 40, 0x3000, 70, 1));  // 140: a new maximum, no edge yet
  EXPECT_EQ(dev(r, 0).peak, 140);
  EXPECT_EQ(sites(dev(r, 0)), (Sites{{1, 70}, {2, 70}}));
}

TEST(PeakReplay, FreesItNeverSawAllocatedChangeNothing) {
  PeakReplay r;
  r.apply(alloc(1, 10, 0x1000, 100, 1));
  r.apply(free_of(2, 20, 0x9000, 0, 0));     // unknown address: the recorder knew no size
  r.apply(free_of(3, 30, 0x8000, 64, 7));    // made before the replay began: its site is unknown
  r.apply(free_of(4, 40, 0x7000, 500, 1));   // more than its site holds
  const DevicePeakState& d = dev(r, 0);
  EXPECT_EQ(d.current, 100);
  EXPECT_EQ(d.peak, 100);
  EXPECT_EQ(d.unmatched_frees, 3u);
  EXPECT_EQ(sites(d), (Sites{{1, 100}}));
}

TEST(PeakReplay, DevicesAreApartAndFailuresAndMappingsCountNothing) {
  PeakReplay r;
  r.apply(alloc(1, 10, 0x1000, 100, 1, 0));
  r.apply(alloc(2, 20, 0x1000, 300, 2, 1));
  r.apply(free_of(3, 30, 0x1000, 100, 1, 0));
  Event failed = alloc(4, 40, 0, 1 << 30, 5, 0);
  failed.kind_type = pack_kind_type(EventKind::kOom, MemoryType::kDevice);
  r.apply(failed);
  Event map = alloc(5, 50, 0x5000, 1 << 20, 6, 1);
  map.kind_type = pack_kind_type(EventKind::kMap, MemoryType::kMapping);
  r.apply(map);
  EXPECT_EQ(dev(r, 0).peak, 100);
  EXPECT_EQ(dev(r, 0).current, 0);
  EXPECT_EQ(dev(r, 1).peak, 300);
  EXPECT_EQ(sites(dev(r, 1)), (Sites{{2, 300}}));
}

TEST(PeakReplay, AtMostFiftySitesLargestFirst) {
  PeakReplay r;
  for (uint32_t i = 1; i <= 80; ++i) r.apply(alloc(i, i, 0x1000 * i, i, i));
  const auto s = PeakReplay::sites_at_peak(dev(r, 0));
  ASSERT_EQ(s.size(), PeakReplay::kMaxSites);
  EXPECT_EQ(s.front().stack_id, 80u);
  EXPECT_EQ(s.back().stack_id, 31u);
}

TEST(PeakTail, KeepsThePeakExactAfterTheRingWrappedSinceIt) {
  RingFixture f(256);
  Writer w{f};
  PeakTail tail;
  const uint64_t a = w.allocate(1000, 1);
  w.allocate(500, 2);  // the peak: 1500
  w.release(a, 1000, 1);
  for (int i = 0; i < 2000; ++i) {  // ~16 rings of churn, the keeper passing every 40 events
    const uint64_t c = w.allocate(8, 3);
    w.release(c, 8, 3);
    if (i % 20 == 0) peak_tail_step(f.ring, &tail, w.t);
  }
  passes(f, &tail, w.t + kSlackNs * 2);
  EXPECT_EQ(tail.kept.lost, 0u);
  EXPECT_EQ(tail.kept.late, 0u);
  const DevicePeakState& d = dev(tail.kept.replay, 0);
  EXPECT_EQ(d.peak, 1500);
  EXPECT_EQ(sites(d), (Sites{{1, 1000}, {2, 500}}));
}

TEST(PeakTail, AWrapBeforeItReadEndsTheReplayFromTheStartAndOpensAGap) {
  RingFixture f(256);
  Writer w{f};
  PeakTail tail;
  w.allocate(1000, 1);
  peak_tail_step(f.ring, &tail, w.t);
  for (int i = 0; i < 400; ++i) w.allocate(10, 2);  // more than the ring between two passes
  passes(f, &tail, w.t + kSlackNs * 2);
  EXPECT_GT(tail.kept.lost, 0u);
  EXPECT_TRUE(tail.kept.stopped());
  EXPECT_EQ(tail.kept.gaps, 1u);
  // What it replayed before the loss (here: nothing had passed its horizon
  // yet) is a lower bound; nothing after it counts there (the replay since
  // the gap: test_peak_gap.cpp).
  const auto& devs = tail.kept.replay.devices();
  EXPECT_TRUE(devs.empty() || devs.at(0).peak <= 1000);
}

TEST(PeakTail, ReplaysInTimeOrderAcrossBlocks) {
  // Two "threads": A took its block first, B writes later seqs earlier in
  // time. In seq order the replay would see A's allocation before B's free
  // (a peak of 300 that never was); in time order the peak is 200.
  RingFixture f(1024);  // block 16
  Writer a{f}, b{f};
  const uint64_t first = f.ring.claim(&a.block).seq;  // A's block [first, first+16)
  (void)first;
  b.t = a.t;
  const uint64_t x = b.allocate(200, 1);  // B: seq first+16.., t+1ms
  b.release(x, 200, 1);                    // t+2ms
  a.t = b.t;
  a.allocate(100, 2);                      // A: a lower seq, t+3ms
  PeakTail tail;
  const uint64_t now = a.t + kSlackNs * 2;
  peak_tail_step(f.ring, &tail, now);  // notes end() now: what comes later is later
  b.t = now;
  for (int i = 0; i < 200; ++i) b.allocate(1, 3);  // the floor passes both blocks
  passes(f, &tail, b.t + kSlackNs * 2);
  ASSERT_GE(tail.kept.horizon_ns, a.t);
  ASSERT_EQ(tail.kept.lost, 0u);
  EXPECT_EQ(dev(tail.kept.replay, 0).peak, 200);
}

TEST(PeakFinish, TheBundleCarriesTheKeeperToTheCut) {
  RingFixture f(1024);
  Writer w{f};
  PeakTail tail;
  const uint64_t a = w.allocate(1000, 1);
  w.release(a, 1000, 1);
  peak_tail_step(f.ring, &tail, w.t);
  w.allocate(700, 2);
  w.allocate(600, 3);  // the peak, 1300: after anything the keeper replayed
  // The frozen window: the whole ring, as a freeze copies it.
  std::vector<Event> window(1024);
  uint64_t lost = 0;
  FrozenState frozen;
  frozen.end_seq = f.ring.end();
  frozen.event_count = copy_ring_events(f.ring, 1, frozen.end_seq, window.data(), &lost);
  frozen.events = window.data();
  frozen.cut_ns = w.t + 1;
  frozen.wall_offset_ns = 5;
  PeakInput in;
  in.kept = tail.kept;
  in.keeper = true;
  in.capacity = 1024;
  PeakReport rep;
  finish_peak(in, frozen, &rep);
  std::vector<LiveEntry> live(2);
  live[0].key = 0x1000, live[0].size = 700, live[0].stack_id = 2, live[0].device = 0;
  live[1].key = 0x2000, live[1].size = 600, live[1].stack_id = 3, live[1].device = 0;
  finish_peak_live(live, {{0, 1300}}, nullptr, 0, frozen, &rep);
  ASSERT_EQ(rep.devices.size(), 1u);
  const PeakDevice& p = rep.devices[0];
  EXPECT_TRUE(p.exact) << p.why_inexact;
  EXPECT_EQ(p.peak_bytes, 1300u);
  EXPECT_EQ(p.peak_time_ns, w.t + 5);
  EXPECT_EQ(p.live_now_bytes, 1300u);
  EXPECT_EQ(p.events_replayed, 4u);
  ASSERT_EQ(p.sites.size(), 2u);
  EXPECT_EQ(p.sites[0].stack_id, 2u);
}

TEST(PeakFinish, NoKeeperAndAWrappedRingGiveTheLiveSetAsALowerBound) {
  FrozenState frozen;
  frozen.end_seq = 5000;
  frozen.cut_ns = 77;
  PeakInput in;
  in.capacity = 1024;
  PeakReport rep;
  finish_peak(in, frozen, &rep);
  std::vector<LiveEntry> live(1);
  live[0].key = 0x9000, live[0].size = 4096, live[0].stack_id = 9, live[0].device = 2;
  finish_peak_live(live, {{2, 4096}}, nullptr, 0, frozen, &rep);
  ASSERT_EQ(rep.devices.size(), 1u);
  const PeakDevice& p = rep.devices[0];
  EXPECT_FALSE(p.exact);
  EXPECT_FALSE(p.why_inexact.empty());
  EXPECT_EQ(p.peak_bytes, 4096u);
  EXPECT_EQ(p.peak_seq, 0u);
  EXPECT_EQ(p.peak_time_ns, 77u);
  ASSERT_EQ(p.sites.size(), 1u);
  EXPECT_EQ(p.sites[0].stack_id, 9u);
}

TEST(PeakFinish, AStoppedKeeperTakesTheWindowsLargestTotalAsALowerBound) {
  FrozenState frozen;
  frozen.end_seq = 5000;
  frozen.cut_ns = 900;
  frozen.wall_offset_ns = 1000;
  PeakInput in;
  in.keeper = true;
  in.capacity = 1024;
  in.kept.lost = 7;  // the keeper stopped before it replayed anything
  PeakReport rep;
  finish_peak(in, frozen, &rep);
  // The window after the history (wall time, live_after derived).
  std::vector<Event> window = {alloc(4000, 1500, 0x1000, 300, 1), alloc(4001, 1600, 0x2000, 200, 2),
                               free_of(4002, 1700, 0x1000, 300, 1)};
  window[0].live_after = 300, window[1].live_after = 500, window[2].live_after = 200;
  std::vector<LiveEntry> live(1);
  live[0].key = 0x2000, live[0].size = 200, live[0].stack_id = 2, live[0].device = 0;
  finish_peak_live(live, {{0, 200}}, window.data(), window.size(), frozen, &rep);
  ASSERT_EQ(rep.devices.size(), 1u);
  const PeakDevice& p = rep.devices[0];
  EXPECT_FALSE(p.exact);
  EXPECT_NE(p.why_inexact.find("reused 7 slots"), std::string::npos) << p.why_inexact;
  EXPECT_EQ(p.peak_bytes, 500u);
  EXPECT_EQ(p.peak_seq, 4001u);
  EXPECT_EQ(p.peak_time_ns, 1600u);
  EXPECT_TRUE(p.sites.empty()) << "not known from the window's totals";
  EXPECT_EQ(p.live_now_bytes, 200u);
}
