// The status region's figures (common/status_region.h), from what the
// recorder keeps anyway: each device's live bytes (record/live_bytes.h, a
// few thousand relaxed loads) and the peak keeper's replay
// (capture/peak_keeper.h: each device's running total and high-water mark,
// each stack's live bytes and count). Nothing here runs on the
// intercepted call; collect() runs on the keeper's thread, after a pass,
// with the pass lock held.
//
// The keeper replays up to its horizon, which stays about 0.1 s and a
// sixteenth of the ring behind the newest event (peak_keeper.h), and not
// at all past the ring's floor while the program is quiet. So collect()
// brings a copy of the replay up to now, as a bundle does (peak_finish.h):
// the keeper's pending events and the ring's seqs from its cursor to the
// end, in time order, applied to a copy. Then the figures are those of a
// bundle written at that moment (`exact`). That costs a copy of the
// replay and a sort of those events, so it runs only within a budget of
// the keeper thread's CPU time (kPeekShare of a core, measured per pass),
// and is not redone while nothing new was recorded (a thread fills the
// seqs of its block below end(), so end() alone does not say it: the seqs
// not complete at the last look, and the new ones past its end, are looked
// at again; an idle program costs a few loads per thread an update). Past the budget (a
// busy program: tens of thousands of events per 0.1 s) the figures are the
// keeper's own (`settled`: sites and peak about 0.1 s old; live bytes are
// always now). A keeper that lost events (the ring wrapped between its
// passes) has no sites to give (`no_sites`), and its peak is a lower bound.
#pragma once
#include <cstdint>
#include <vector>

#include "common/config.h"
#include "common/event.h"
#include "common/status_region.h"
#include "shim/dump/capture/peak_keeper.h"
#include "shim/record/ring.h"

namespace gpumemrec {

struct StackFigure {
  uint32_t stack_id = 0;
  uint64_t bytes = 0, count = 0;
};

struct DeviceFigure {
  int device = -1;
  uint64_t live = 0;
  uint64_t peak = 0;
  uint64_t peak_time_ns = 0;  // CLOCK_MONOTONIC, 0 = unknown
  bool exact = false;
};

struct StatusFigures {
  uint32_t state = status::kStateExact;
  const char* note = "";              // why not exact, in words ("" when exact)
  std::vector<DeviceFigure> devices;  // by device
  std::vector<StackFigure> stacks;    // largest first (then by stack id), at most kTopStacks
  uint64_t stacks_total = 0;          // stacks holding bytes
  uint64_t events = 0;
};

// Stacks a region's sites are made from (the largest; status_names.h
// groups them into sites as `gpumemrec report` does).
constexpr size_t kTopStacks = 256;
// The peek's budget: this share of one core, as thread CPU time.
constexpr double kPeekShare = 0.004;
constexpr uint64_t kPeekBurstNs = 50000000ull;  // at most this much saved up
constexpr uint64_t kCheapLookSlots = 4096;      // a look this small is made whatever the budget

class LiveBytes;

class FigureCollector {
 public:
  // The peek's budget: `share` of a core, at most `burst_ns` saved up.
  explicit FigureCollector(double share = kPeekShare, uint64_t burst_ns = kPeekBurstNs)
      : share_(share), burst_ns_(double(burst_ns)), tokens_ns_(double(burst_ns)) {}
  // The recorder's ring and live bytes, the keeper's state after its pass.
  void collect(const Ring& ring, const LiveBytes& live, const PeakKept& kept, uint64_t now_ns, StatusFigures* out);
  // Tests: how many peeks ran and were skipped for the budget.
  uint64_t peeks() const { return peeks_; }
  uint64_t skipped() const { return skipped_; }

 private:
  bool changed(const Ring& ring, const PeakKept& kept, uint64_t end, uint64_t now_ns, bool* skip);
  bool peek(const Ring& ring, const PeakKept& kept, uint64_t end);
  bool afford(double cost_ns, uint64_t now_ns);
  void spent(uint64_t t0, uint64_t n, double* per_item);
  struct Key {
    uint64_t end = 0, cursor = 0, pending = 0, horizon = 0;
    bool operator==(const Key& o) const {
      return end == o.end && cursor == o.cursor && pending == o.pending && horizon == o.horizon;
    }
  };
  Key last_;
  bool have_last_ = false;
  std::vector<uint64_t> holes_;  // seqs in [cursor, last_.end) not complete at the last look
  bool last_ok_ = false;       // the replay below is the peeked one
  PeakReplay peeked_;          // the keeper's replay brought up to last_.end
  std::vector<Event> scratch_;
  double share_, burst_ns_;
  double tokens_ns_;
  uint64_t tokens_at_ns_ = 0;
  double ns_per_event_ = 100;  // the peek's measured cost per event, smoothed
  double ns_per_slot_ = 20;    // the look for new events, per seq
  uint64_t peeks_ = 0, skipped_ = 0;
};

// The figures from a replay (the keeper's or the peeked one) and the live
// bytes of each device (tests call it directly).
void figures_from_replay(const PeakReplay& replay, const uint64_t (&live)[kMaxDevices + 1], bool exact_peaks,
                         StatusFigures* out);

}  // namespace gpumemrec
