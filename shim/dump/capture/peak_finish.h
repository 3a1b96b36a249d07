// A bundle's peak.json (docs/bundle-format.md): the keeper's state
// (peak_keeper.h), copied for the bundle, brought up to the cut with its
// pending events and the window's seqs from its cursor on, replayed on the
// copy in time order. Run by finish_snapshot on the frozen events as
// copied (before the history rewrites live_after, which shares its word
// with freed_stack: event.h).
//
// A device's peak is exact when the keeper lost nothing, nothing came late,
// the window holds every seq from the keeper's cursor on, and the replay
// ends where the reconciled live set is. Otherwise `exact` is false with
// why, and the figure is a lower bound where the keeper lost events (what it
// replayed before its first loss, or the live set at the cut when that is
// more); late events and an end away from the live set make it a replay
// that may be off by those events' bytes either way.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/event.h"
#include "shim/dump/capture/freeze.h"
#include "shim/dump/capture/peak_keeper.h"
#include "shim/record/live_table.h"

namespace gpumemrec {

struct PeakDevice {
  int device = -1;
  uint64_t peak_bytes = 0;
  uint64_t peak_time_ns = 0;  // CLOCK_MONOTONIC here; CLOCK_REALTIME once finish_peak_live ran
  uint64_t peak_seq = 0;      // 0: the figure is the live set at the cut
  bool exact = true;
  std::string why_inexact;
  uint64_t live_now_bytes = 0;
  uint64_t events_replayed = 0;
  std::vector<PeakSite> sites;
};

struct PeakReport {
  bool present = false;  // peak.json is written
  std::string why;       // why no device's peak is exact, or "" (every device's reason starts here)
  std::vector<PeakDevice> devices;
};

// What finish_snapshot needs besides the frozen state.
struct PeakInput {
  PeakKept kept;          // the keeper's copy, or an empty state (no keeper: the window alone)
  bool keeper = false;    // the keeper runs
  uint64_t capacity = 0;  // the ring's
};

// `frozen`: its events as copied (CLOCK_MONOTONIC, before order_events).
void finish_peak(const PeakInput& in, const FrozenState& frozen, PeakReport* out);
// After the reconciliation and the history: the live set at the cut
// (`live`, bytes per device) checks the replay's end; where the figure is
// not exact, it and the window's totals (`events`: time order, wall time,
// live_after derived) are floors of the lower bound. Times go to wall time.
void finish_peak_live(const std::vector<LiveEntry>& live, const std::map<int, uint64_t>& live_by_device,
                      const Event* events, size_t count, const FrozenState& frozen, PeakReport* out);

}  // namespace gpumemrec
