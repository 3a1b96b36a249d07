// Step 1 of a dump, on the failing thread: freeze what the bundle needs,
// and nothing else (no allocation, no lock but the live table's home locks
// and the swap lock below, no symbolization, no file). The failed call then
// returns; the writer thread (writer_thread.h) turns the frozen state into a
// bundle.
//
// What is frozen: the live tables (held first: each home's state at the
// moment its lock was taken is what the writer later copies; live_table.h,
// "The hold"), the cut of the ring (after the hold) and the ring's window
// before the cut (its last `capacity` seqs). Reconciling the tables with
// those events (reconciler.h) is the writer's work. Neither the tables nor
// the ring is copied on the failing thread: the failing call costs a lock
// of each home and a compare-and-swap (docs/performance.md, "The failing
// call").
//
// The ring is handed over, not copied: the freeze makes a spare ring buffer
// live (Ring::swap_to: one compare-and-swap on the claim counter, which is
// also the cut) and the writer copies the window out of the buffer that was
// live, later, on its own thread (freeze_collect). Until then that buffer is
// pinned: no later freeze makes it live again. The seqs stay one sequence
// across the swap (ring.h), so the next bundle's window runs from its cut
// back through the handed-over buffer: the same history a single ring would
// have shown. What the failing thread still copies: the live tables and the
// part of the window that sits in the buffer it makes live (older
// generations in it, overwritten from the cut on: none unless several
// freezes came within one ring of events). With no spare buffer (every other
// one pinned by windows not copied yet) the freeze copies the whole window
// itself, as it did before the hand-over. Signal and exit dumps write on
// their own thread at once: they copy, never swap.
//
// Memory: regions mapped at start-up with MAP_NORESERVE (address space
// only; pages are touched by the first freeze, kept for the next ones and
// given back with MADV_DONTNEED by freeze_trim when failures stop):
//   events  ring capacity x 64 bytes (the whole window fits, always), filled
//           by the writer;
//   live    room for kLiveReserve entries, on a 2 MiB boundary in huge
//           pages where the kernel gives them (freeze.cpp), replaced by a
//           larger region when more are live (by the writer's collect, or
//           by a freeze that copies; if the kernel refuses, a copying freeze
//           fails and the caller writes no bundle, one warning; a collect
//           ends the hold and its bundle lists nothing live, one warning);
//   logs    the live tables' hold logs (live_table_hold.cpp): 64 homes x
//           8,192 records of 56 bytes per table, mapped at the first hold,
//           their touched pages given back after each collect;
//   ring    kRingBuffers - 1 spare ring buffers (capacity x 64 bytes each),
//           touched by the program's own calls once one is live; a buffer
//           that is neither live nor pinned and whose newest event is more
//           than one ring of events old is given back by freeze_trim.
// kFreezeSets sets of regions exist, so that a new episode's failure can be
// frozen while the writer still writes the previous one's bundle (with
// GPUMEMREC_EPISODE_MS=0 every failure is an episode). A set belongs to the
// thread that acquired it until its bundle is written (freeze_done).
#pragma once
#include <cstddef>
#include <cstdint>

#include "common/event.h"
#include "shim/record/live_table.h"
#include "shim/record/ring.h"

namespace gpumemrec {

struct Recorder;

struct FrozenState {
  // The ring before the cut, holes left out (seq order here; time order
  // once finish_snapshot ran): after freeze(), only
  // the part the failing thread copied; complete after freeze_collect().
  // Their times are CLOCK_MONOTONIC, as recorded (event_order.h).
  Event* events = nullptr;
  uint64_t event_count = 0;
  // Device/managed allocations, then VMM handles: a failure's freeze holds
  // the live tables (live_table.h, "The hold") and freeze_collect copies
  // them; a signal or exit dump's freeze copies them at once.
  LiveEntry* live = nullptr;
  uint64_t live_count = 0;
  bool live_unavailable = false;  // the host would not map the collect's copy: nothing listed
  bool live_after_freeze = false;  // ... nor a stash (live_table_hold.cpp): later changes listed
  uint64_t end_seq = 1;  // the cut: one past the newest claimed seq
  uint64_t first_seq = 1;  // the window's oldest seq (the ring's capacity before end_seq)
  // Events the events region has room for (the ring's capacity; 0: none
  // may be added to the window, in_flight.h).
  uint64_t event_room = 0;
  // CLOCK_REALTIME - CLOCK_MONOTONIC at the freeze: turns the events' and
  // the live entries' times into wall time (one offset for the whole
  // bundle, so their order is kept even if the wall clock stepped).
  int64_t wall_offset_ns = 0;
  // CLOCK_MONOTONIC: from this moment on the window holds every event
  // (shim/record/claim_marks.h); the dump drops its events older than it.
  // 0: from its first event.
  uint64_t complete_from_ns = 0;
  // CLOCK_MONOTONIC at the cut: events recorded after it (a thread that
  // still wrote into the block it took before the cut) are left out, as
  // the live tables were copied before it.
  uint64_t cut_ns = UINT64_MAX;
};

constexpr uint64_t kLiveReserve = 65536;
// Sets 0 and 1 are the failures' (freeze_acquire); set kInlineSet belongs to
// whoever holds the dump slot and writes on its own thread (signal and exit
// dumps): those never wait for a failure's set, and a failure's job, holding
// its set, may wait for the slot without a deadlock.
constexpr int kFreezeSets = 3;
constexpr int kPooledSets = 2;
constexpr int kInlineSet = 2;

constexpr int kRingBuffers = Ring::kMaxBuffers;  // the live one and the spares

// From start-up: reserves the regions for `ring`'s capacity and gives the
// ring its spare buffers.
bool freeze_init(Ring* ring);
// A free pooled set (lock-free), or -1 when both hold a frozen state not yet
// written.
int freeze_acquire();
// Holds (a failure's set) or copies (the inline set, or a failure while the
// other set's hold is pending) the live tables and hands the ring over (see
// above). False (and *why) when the live copy cannot get the memory it needs
// (the set stays the caller's: freeze_done).
bool freeze(Recorder* r, int set, FrozenState* out, const char** why);
// The writer, before it reads out->events or out->live: copies the held live
// tables as they were at the freeze, then the rest of the window out of the
// handed-over buffers, and unpins them (nothing when the freeze copied
// everything). May take a while for a big ring: off the failing thread.
void freeze_collect(int set, FrozenState* out);
// The job of the set is over: the set is free again (its pages stay for the
// next freeze, except the inline set's); buffers still pinned for it (a job
// given up before freeze_collect) are unpinned.
void freeze_done(int set);
// The free pooled sets' pages go back to the kernel, and the ring buffers
// no window can need (see above) (the writer calls it after kTrimIdleMs
// without a job).
void freeze_trim();
constexpr unsigned kTrimIdleMs = 5000;
// Events [lo, hi) of the ring into dst (room for hi - lo), holes left out,
// as a freeze copies its window (a slot being written is waited for,
// briefly); *lost += the seqs overwritten by newer events or no longer
// covered. The count copied. For the peak keeper (shim/dump/capture/peak_keeper.h).
uint64_t copy_ring_events(const Ring& ring, uint64_t lo, uint64_t hi, Event* dst, uint64_t* lost);
// A forked child: every set is free, no buffer pinned, the swap lock free
// (the parent's writer and other threads are not here).
void freeze_atfork_child();

}  // namespace gpumemrec
