// Allocations in flight at the copy (docs/bundle-format.md, "Order of
// events"). An allocation is recorded in this order: the real call returns,
// its seq and slot are claimed, the live entry is inserted, the event is
// published (recorder.cpp). A thread preempted between the insert and the
// publish leaves a live entry that the tables' copy holds while the
// window's copy finds its slot still being written and, after waiting
// (freeze.cpp, copy_events), leaves it out. The bundle would then list the
// allocation and its history would never have made it: every total before
// it too high by its size, and, when the address was re-allocated in the
// window after a free also in flight, the earlier allocation's bytes never
// leaving (totals below zero).
//
// Such an event is rebuilt from its live entry: the entry is the event's own
// record (live_entry_from_event: address, size, time, seq, stack, thread,
// device, api, memory type); the stream and the time spent in the call are
// not in it (0). Only entries that the window must hold are rebuilt: a seq
// in the window's range, a time the window is complete for (not before
// complete_from, not after the cut), and not among the window's events.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/event.h"
#include "shim/record/live_table.h"

namespace gpumemrec {

struct WindowBounds {
  uint64_t first_seq = 1;  // the window's seqs: [first_seq, end_seq)
  uint64_t end_seq = 1;
  uint64_t from_ns = 0;           // times, in the events' clock: [from_ns, to_ns]
  uint64_t to_ns = UINT64_MAX;
};

// `events[0, count)`: the window, in time order (event_order.h), with room
// for `room` events in all. Appends the allocations rebuilt from `live`
// (times in the events' clock) and restores the order. Returns the new
// count; a rebuilt event beyond `room` is left out (it cannot happen: each
// one's seq is a seq of the window the copy left out).
size_t add_in_flight_allocations(Event* events, size_t count, size_t room, const std::vector<LiveEntry>& live,
                                 const WindowBounds& w);

}  // namespace gpumemrec
