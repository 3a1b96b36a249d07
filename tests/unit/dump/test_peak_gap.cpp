// The peak after a gap (peak_keeper.h "Gaps", peak_replay.h "Anchored
// replays", peak_anchor.h): a replay that starts in a run under way, its
// anchoring on the live set at the cut, a keeper that loses seqs and goes
// on, and a bundle that says the peak since the gap exactly.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "shim/dump/capture/peak_anchor.h"
#include "shim/dump/capture/peak_finish.h"
#include "shim/dump/capture/peak_keeper.h"
#include "tests/unit/dump/peak_events.h"

using namespace gpumemrec;
using namespace gpumemrec::peak_test;

namespace {

LiveEntry live_entry(uint64_t addr, uint64_t size, uint32_t stack, int device = 0) {
  LiveEntry a;
  a.key = addr;
  a.size = size;
  a.stack_id = stack;
  a.device = int16_t(device);
  return a;
}

// The whole window of `f`'s ring, frozen as a bundle freezes it, cut now.
struct Window {
  std::vector<Event> events;
  FrozenState frozen;
  explicit Window(RingFixture& f) : events(f.ring.capacity()) {
    const uint64_t end = f.ring.end();
    const uint64_t first = end > f.ring.capacity() + 1 ? end - f.ring.capacity() : 1;
    uint64_t lost = 0;
    frozen.end_seq = end;
    frozen.event_count = copy_ring_events(f.ring, first, end, events.data(), &lost);
    frozen.events = events.data();
    frozen.cut_ns = monotonic_ns();
    frozen.complete_from_ns = f.ring.complete_from(first);
  }
};

uint64_t sum_of(const std::vector<LiveEntry>& live) {
  uint64_t n = 0;
  for (const LiveEntry& a : live) n += a.size;
  return n;
}

PeakDevice finish(const PeakInput& in, const Window& w, const std::vector<LiveEntry>& live) {
  PeakReport rep;
  finish_peak(in, w.frozen, &rep);
  finish_peak_live(live, {{0, sum_of(live)}}, nullptr, 0, w.frozen, &rep);
  EXPECT_EQ(rep.devices.size(), 1u);
  return rep.devices.empty() ? PeakDevice{} : rep.devices[0];
}

}  // namespace

TEST(PeakReplay, AnAnchoredReplayKeepsEachChangeSinceItsStart) {
  PeakReplay r = PeakReplay::anchored(5);
  r.apply(free_of(1, 10, 0x1000, 100, 1));  // made before the start: site 1 goes below its start
  r.apply(alloc(2, 20, 0x2000, 300, 2));    // +200: the peak since the start
  r.apply(free_of(3, 30, 0x2000, 300, 2));  // the falling edge
  const DevicePeakState& d = r.devices().at(0);
  EXPECT_EQ(d.current, -100);
  EXPECT_EQ(d.peak, 200);
  EXPECT_EQ(d.peak_seq, 2u);
  EXPECT_EQ(d.peak_time_ns, 20u);
  EXPECT_EQ(d.fall_time_ns, 30u);
  EXPECT_EQ(d.unmatched_frees, 0u);
  EXPECT_EQ(PeakReplay::site_at_peak(d, d.sites.at(1)).bytes, -100);
  EXPECT_EQ(PeakReplay::site_at_peak(d, d.sites.at(2)).bytes, 300);
}

TEST(PeakReplay, AnAnchoredReplaysStartIsItsFirstPeak) {
  PeakReplay r = PeakReplay::anchored(5);
  r.apply(free_of(1, 10, 0x1000, 100, 1));
  r.apply(alloc(2, 20, 0x2000, 60, 2));  // -40: below the start
  const DevicePeakState& d = r.devices().at(0);
  EXPECT_EQ(d.peak, 0);
  EXPECT_EQ(d.peak_seq, 0u) << "the start";
  EXPECT_EQ(d.peak_time_ns, 5u);
  EXPECT_EQ(d.fall_time_ns, 10u);
  EXPECT_EQ(PeakReplay::site_at_peak(d, d.sites.at(1)).bytes, 0);
}

TEST(PeakAnchor, TheReplaySinceAGapIsAnchoredOnTheLiveSetAtTheCut) {
  // Before T the device held A (site 1, 100) and B (site 2, 50): the
  // replay never saw them.
  PeakReplay r = PeakReplay::anchored(1000);
  r.apply(free_of(1, 1010, 0xA000, 100, 1));  // A
  r.apply(alloc(2, 1020, 0xC000, 400, 3));    // C: 50 + 400, the peak since T
  r.apply(free_of(3, 1030, 0xC000, 400, 3));
  r.apply(alloc(4, 1040, 0xD000, 10, 4));     // D
  PeakAfterGapFigure info;
  info.from_ns = 1000;
  const PeakAfterGapFigure a =
      anchor_after_gap(r, info, {live_entry(0xB000, 50, 2), live_entry(0xD000, 10, 4)}, 0, 60);
  EXPECT_TRUE(a.exact) << a.why_inexact;
  EXPECT_EQ(a.start_bytes, 150u);
  EXPECT_EQ(a.figure.peak_bytes, 450u);
  EXPECT_EQ(a.figure.peak_time_ns, 1020u);
  EXPECT_EQ(a.figure.peak_seq, 2u);
  EXPECT_EQ(a.figure.until_ns, 1030u);
  EXPECT_TRUE(a.figure.stretch_known);
  EXPECT_EQ(sites_of(a.figure.sites), (Sites{{3, 400}, {2, 50}}));
}

TEST(PeakAnchor, ADeviceWithNoChangeSinceTHeldTheLiveSetAllAlong) {
  PeakReplay r = PeakReplay::anchored(1000);
  PeakAfterGapFigure info;
  const PeakAfterGapFigure a = anchor_after_gap(r, info, {live_entry(0xB000, 50, 2)}, 0, 50);
  EXPECT_TRUE(a.exact);
  EXPECT_EQ(a.figure.peak_bytes, 50u);
  EXPECT_EQ(a.figure.peak_time_ns, 1000u);
  EXPECT_EQ(a.figure.until_ns, 0u);
  EXPECT_EQ(sites_of(a.figure.sites), (Sites{{2, 50}}));
}

TEST(PeakAnchor, AReplayTheLiveSetContradictsIsNotExact) {
  PeakReplay r = PeakReplay::anchored(1000);
  r.apply(alloc(1, 1010, 0xC000, 400, 3));  // still live, says the replay; the live set has no site 3
  PeakAfterGapFigure info;
  const PeakAfterGapFigure a = anchor_after_gap(r, info, {live_entry(0xB000, 500, 2)}, 0, 500);
  EXPECT_FALSE(a.exact);
  EXPECT_NE(a.why_inexact.find("disagree"), std::string::npos) << a.why_inexact;
  EXPECT_EQ(a.figure.peak_bytes, 0u) << "no figure it could not stand for";
  EXPECT_TRUE(a.figure.sites.empty());
}

TEST(PeakTail, AfterLostSeqsItResumesAndTheBundleSaysThePeakSinceExactly) {
  RingFixture f(256);  // blocks of 4 seqs, lag 16
  Writer w{f, true};
  PeakTail tail;
  std::vector<LiveEntry> live;
  live.push_back(live_entry(w.allocate(1000, 1), 1000, 1));
  for (int i = 0; i < 400; ++i) live.push_back(live_entry(w.allocate(10, 2), 10, 2));  // wraps before the keeper reads
  peak_tail_step(f.ring, &tail, monotonic_ns());
  ASSERT_GT(tail.kept.lost, 0u);
  ASSERT_EQ(tail.kept.gaps, 1u);
  const uint64_t y = w.allocate(5000, 3);  // the peak since the gap: 10,000 with what was live
  const uint64_t y_time = w.t;
  w.release(y, 5000, 3);
  const uint64_t fell = w.t;
  for (int i = 0; i < 40; ++i) live.push_back(live_entry(w.allocate(1, 4), 1, 4));
  passes(f, &tail, monotonic_ns() + kSlackNs * 2);
  EXPECT_EQ(tail.kept.gaps, 1u) << "the keeper followed since the gap";
  EXPECT_NE(tail.kept.after.from_ns, 0u) << "it resumed";
  EXPECT_LT(tail.kept.after.from_ns, y_time);
  EXPECT_EQ(tail.kept.after.late, 0u);
  Window win(f);
  PeakInput in;
  in.kept = tail.kept;
  in.keeper = true;
  in.capacity = 256;
  const PeakDevice p = finish(in, win, live);
  EXPECT_FALSE(p.exact) << "the gap may have held more";
  EXPECT_NE(p.why_inexact.find("reused"), std::string::npos) << p.why_inexact;
  ASSERT_TRUE(p.after_gap.has_value());
  const PeakAfterGapFigure& a = *p.after_gap;
  EXPECT_TRUE(a.exact) << a.why_inexact;
  EXPECT_EQ(a.gaps, 1u);
  EXPECT_EQ(a.lost, tail.kept.lost);
  EXPECT_EQ(a.from_ns, tail.kept.after.from_ns);
  EXPECT_EQ(a.figure.peak_bytes, 10000u);
  EXPECT_EQ(a.figure.peak_time_ns, y_time);
  EXPECT_EQ(a.figure.until_ns, fell);
  EXPECT_EQ(sites_of(a.figure.sites), (Sites{{3, 5000}, {2, 4000}, {1, 1000}}));
  // The run's figure is the larger of what is known: here the peak since the gap.
  EXPECT_EQ(p.peak_bytes, 10000u);
  EXPECT_EQ(p.peak_time_ns, y_time);
  EXPECT_TRUE(p.stretch_known);
  EXPECT_EQ(sites_of(p.sites), (Sites{{3, 5000}, {2, 4000}, {1, 1000}}));
  EXPECT_EQ(p.live_now_bytes, 5040u);
}

TEST(PeakTail, ASecondGapStartsTheReplaySinceAGapAgain) {
  RingFixture f(256);
  Writer w{f, true};
  PeakTail tail;
  for (int i = 0; i < 400; ++i) w.allocate(10, 2);
  peak_tail_step(f.ring, &tail, monotonic_ns());
  w.allocate(5000, 3);
  passes(f, &tail, monotonic_ns() + kSlackNs * 2);
  ASSERT_EQ(tail.kept.gaps, 1u);
  const uint64_t first_from = tail.kept.after.from_seq;
  for (int i = 0; i < 400; ++i) w.allocate(10, 2);  // lost again
  peak_tail_step(f.ring, &tail, monotonic_ns() + kSlackNs * 8);
  EXPECT_EQ(tail.kept.gaps, 2u);
  EXPECT_GT(tail.kept.after.from_seq, first_from + 400);
  const auto& devs = tail.kept.after.replay.devices();
  EXPECT_TRUE(devs.empty() || devs.at(0).peak < 5000) << "only the replay since the last gap can be anchored";
}

TEST(PeakFinish, AGapAtTheBundleIsReplayedFromTheMomentTheWindowHoldsEveryEvent) {
  RingFixture f(256);
  Writer w{f, true};
  std::vector<LiveEntry> live;
  live.push_back(live_entry(w.allocate(1000, 1), 1000, 1));  // out of the window by the cut
  for (int i = 0; i < 300; ++i) w.release(w.allocate(8, 2), 8, 2);
  const uint64_t y = w.allocate(5000, 3);
  w.release(y, 5000, 3);
  live.push_back(live_entry(w.allocate(10, 4), 10, 4));
  Window win(f);
  ASSERT_NE(win.frozen.complete_from_ns, 0u);
  PeakInput in;  // no keeper ran
  in.capacity = 256;
  const PeakDevice p = finish(in, win, live);
  EXPECT_FALSE(p.exact);
  EXPECT_NE(p.why_inexact.find("no peak keeper"), std::string::npos) << p.why_inexact;
  ASSERT_TRUE(p.after_gap.has_value());
  EXPECT_TRUE(p.after_gap->exact) << p.after_gap->why_inexact;
  EXPECT_EQ(p.after_gap->from_ns, win.frozen.complete_from_ns);
  EXPECT_EQ(p.after_gap->figure.peak_bytes, 6000u);
  EXPECT_EQ(sites_of(p.after_gap->figure.sites), (Sites{{3, 5000}, {1, 1000}}));
  EXPECT_EQ(p.peak_bytes, 6000u);
}

TEST(PeakFinish, AKeeperThatHadNotResumedByTheCutLeavesTheGapOpen) {
  PeakInput in;
  in.keeper = true;
  in.capacity = 1024;
  in.kept.lost = 3;
  peak_open_gap(&in.kept);
  FrozenState frozen;
  frozen.end_seq = 2;
  frozen.cut_ns = 100;
  PeakReport rep;
  finish_peak(in, frozen, &rep);
  EXPECT_FALSE(rep.after.has_value());
  EXPECT_FALSE(rep.after_why.empty());
  finish_peak_live({live_entry(0x1000, 64, 1)}, {{0, 64}}, nullptr, 0, frozen, &rep);
  ASSERT_EQ(rep.devices.size(), 1u);
  EXPECT_FALSE(rep.devices[0].exact);
  EXPECT_FALSE(rep.devices[0].after_gap.has_value());
  EXPECT_EQ(rep.devices[0].peak_bytes, 64u) << "the live set at the cut, a lower bound";
}
