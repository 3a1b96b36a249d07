// The order of a bundle's events (docs/bundle-format.md, "Order of
// events"): time, then seq.
//
// Seq is not time order across threads: each thread hands out seqs from
// its own block (shim/record/ring.h, "Blocks"), so a thread that took its
// block early can record an event after another thread's later-numbered
// one. Within a thread, seq is the order of its calls. The ring's times are
// CLOCK_MONOTONIC (a wall clock can step back, which would reorder events
// that truly followed each other); the dump converts them to wall time with
// one offset taken at the freeze, so the order is kept.
//
// Times are taken so that the order is right where it matters, when an
// address is freed by one thread and handed to another by the driver: an
// allocation's time is taken after the real call returned, a free's (and an
// unmap's) before the real call (recorder.cpp, fill()). Seq breaks ties
// (events of one thread within one clock tick).
#pragma once
#include <cstddef>
#include <cstdint>

#include "common/event.h"
#include "shim/record/live_table.h"

namespace gpumemrec {

inline bool earlier(uint64_t time_a, uint64_t seq_a, uint64_t time_b, uint64_t seq_b) {
  return time_a != time_b ? time_a < time_b : seq_a < seq_b;
}
inline bool earlier(const Event& a, const Event& b) { return earlier(a.time_ns, a.seq, b.time_ns, b.seq); }
// An allocation's live entry keeps its event's time and seq.
inline bool earlier(const LiveEntry& a, const Event& b) { return earlier(a.time_ns, a.seq, b.time_ns, b.seq); }

// In place: leaves out the events recorded before `from_ns` (CLOCK_MONOTONIC,
// claim_marks.h; 0 keeps all) or after `to_ns` (the cut), puts the rest in the order
// above and in wall time (adds `wall_offset_ns`, CLOCK_REALTIME -
// CLOCK_MONOTONIC at the freeze). Returns how many are kept. Events of one
// thread are in order already; a window recorded by one thread at a time
// costs one pass.
size_t order_events(Event* events, size_t count, uint64_t from_ns, uint64_t to_ns, int64_t wall_offset_ns);

}  // namespace gpumemrec
