// The peak since a gap, anchored on the live set at the cut (peak_finish.h).
//
// A replay that resumed at T (peak_replay.h, "Anchored replays") knows each
// device's and each site's change since T, up to the cut. The live set at
// the cut (the reconciled allocations) is what every change led to, so the
// total at any moment t >= T is the live set minus the changes after t:
//   total(t)      = live - change(cut) + change(t)
//   site(s, t)    = live(s) - change(s, cut) + change(s, t)
// which gives the peak since T, its moment and its sites, exactly, as long
// as the replay saw every change after T (no later gap, nothing late).
// What it checks: no site and no total is negative at T or at the peak
// (a site cannot hold less than nothing); a negative one means the replay
// and the live set disagree, and the figure is then not exact (said).
#pragma once
#include <cstdint>
#include <vector>

#include "shim/dump/capture/peak_finish.h"
#include "shim/dump/capture/peak_replay.h"
#include "shim/record/live_table.h"

namespace gpumemrec {

// `after`: anchored at info.from_ns; `live_now`: the live set's bytes on
// `device` (as live_by_device counts them). Times stay CLOCK_MONOTONIC.
PeakAfterGapFigure anchor_after_gap(const PeakReplay& after, const PeakAfterGapFigure& info,
                                    const std::vector<LiveEntry>& live, int device, uint64_t live_now);

}  // namespace gpumemrec
