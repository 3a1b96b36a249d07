// One consistent history in events.json (docs/bundle-format.md, "Order of
// events"). The events come here in time order (event_order.h); a thread's
// running total (`live_after`) is not recorded at all (a shared total was a
// cache line every allocating thread wrote), so it is derived here, over the
// events of the cut in that order:
//  - memory_allocated is recomputed by replaying each event's change from a
//    base per device: the reconciled live set at the cut minus the changes of
//    the events in the cut, so the last total of each device is what
//    allocations.json holds;
//  - an allocation the window re-allocates with no free in between (its
//    free was still in flight when the window was copied: a hole) leaves
//    the total just before the re-allocation (history.cpp, implied_frees).
// Timestamps need nothing here: the window is sorted by them
// (event_order.h), so they never go back.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/event.h"
#include "shim/record/live_table.h"

namespace gpumemrec {

// Bytes an event adds to (or removes from) its device's total: a successful
// allocation adds its size, a successful free of a known allocation removes
// its size; nothing else (failures, mappings) changes the total.
inline int64_t event_memory_change(const Event& e) {
  switch (event_kind(e)) {
    case EventKind::kAlloc: return e.address ? int64_t(e.size) : 0;
    case EventKind::kFree: return -int64_t(e.size);
    default: return 0;
  }
}

// Rewrites live_after of `events` (the cut, in time order).
// `live_at_cut`: the reconciled live set ("mapping" entries are not counted).
void make_history_consistent(Event* events, size_t count, const std::vector<LiveEntry>& live_at_cut);
inline void make_history_consistent(std::vector<Event>* events, const std::vector<LiveEntry>& live_at_cut) {
  make_history_consistent(events->data(), events->size(), live_at_cut);
}

}  // namespace gpumemrec
