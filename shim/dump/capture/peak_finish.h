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
// why, and the figure is a lower bound where events were lost: the largest
// of what the replay from the run's start reached before the first gap,
// the peak since the last gap (below), the live set at the cut and the
// window's totals. Late events and an end away from the live set make it a
// replay that may be off by those events' bytes either way.
//
// After a gap (peak_keeper.h, "Gaps"; or one at the bundle: the ring
// wrapped past the keeper, or no keeper ran, and the window's marks say
// from when it holds every event) the replay since T is anchored on the
// live set at the cut (peak_anchor.h): the peak since T, its moment and
// its sites, exactly, in `after_gap`.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/event.h"
#include "shim/dump/capture/freeze.h"
#include "shim/dump/capture/peak_keeper.h"
#include "shim/record/live_table.h"

namespace gpumemrec {

// A figure and the moment it was reached. Times: CLOCK_MONOTONIC here;
// CLOCK_REALTIME once finish_peak_live ran.
struct PeakFigure {
  uint64_t peak_bytes = 0;
  uint64_t peak_time_ns = 0;
  uint64_t peak_seq = 0;     // 0: the figure is the live set at the cut (after a gap: the moment T)
  uint64_t until_ns = 0;     // the first decrease after it; 0: none by the cut, or not known
  bool stretch_known = false;  // [peak_time_ns, until_ns or the cut) is exactly when it held
  std::vector<PeakSite> sites;  // largest first, at most kMaxSitesKept
};

// The peak since the last gap (peak_anchor.h).
struct PeakAfterGapFigure {
  uint64_t gaps = 0, lost = 0;
  uint64_t from_seq = 0, from_ns = 0;  // T
  bool exact = true;
  std::string why_inexact;
  uint64_t start_bytes = 0;  // the total at T
  PeakFigure figure;
};

// Memory by role at the peak (peak_roles.h).
struct PeakRoles {
  bool known = false;
  std::string why_not_known;
  std::string framework, walk;  // "torch"; "exit", "oom"
  std::string walk_status;      // the walk's: complete, partial
  uint64_t walk_time_ns = 0;    // CLOCK_REALTIME
  std::vector<std::pair<std::string, uint64_t>> bytes;  // role key -> bytes, in the tools' order, then outside_framework
};

constexpr size_t kMaxSitesKept = 1024;  // for peak.json's by_library; kMaxSites are listed

struct PeakDevice : PeakFigure {
  int device = -1;
  bool exact = true;
  std::string why_inexact;
  uint64_t live_now_bytes = 0;
  uint64_t events_replayed = 0;
  std::optional<PeakAfterGapFigure> after_gap;
  std::optional<PeakRoles> roles;
};

struct PeakReport {
  bool present = false;  // peak.json is written
  std::string why;       // why no device's peak is exact, or "" (every device's reason starts here)
  std::vector<PeakDevice> devices;
  // The replay since the last gap, for finish_peak_live to anchor (null: no
  // gap, or no moment T known by the cut: after_why).
  std::optional<PeakReplay> after;
  PeakAfterGapFigure after_info;  // its gaps, lost, T, late (exact/why_inexact)
  std::string after_why;          // why there is no replay since the gap, or ""
};

// What finish_snapshot needs besides the frozen state.
struct PeakInput {
  PeakKept kept;          // the keeper's copy, or an empty state (no keeper: the window alone)
  bool keeper = false;    // the keeper runs
  uint64_t capacity = 0;  // the ring's
  // After a gap the keeper had not resumed from: T for kept.after.from_seq
  // from the ring's marks when the bundle is made (0: none yet).
  uint64_t resume_from_ns = 0;
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
