// Step 1 of a dump, on the failing thread: freeze what the bundle needs into
// memory reserved ahead, and nothing else (no allocation, no lock but the
// live table's shard locks, no symbolization, no file). The failed call then
// returns; the writer thread (writer_thread.h) turns the frozen state into a
// bundle.
//
// What is frozen: the live tables (copied first), the cut of the ring (its
// end read after the copy) and the ring's events before the cut. Reconciling
// the copy with those events (reconciler.h) is the writer's work.
//
// Memory: regions mapped at start-up with MAP_NORESERVE (address space
// only; pages are touched by the first freeze, kept for the next ones and
// given back with MADV_DONTNEED by freeze_trim when failures stop):
//   events  ring capacity x 64 bytes (the whole ring fits, always);
//   live    room for kLiveReserve entries, grown with mremap at the freeze
//           when more are live (one system call; if the kernel refuses, the
//           freeze fails and the caller writes no bundle, one warning).
// kFreezeSets sets of regions exist, so that a new episode's failure can be
// frozen while the writer still writes the previous one's bundle (with
// GPUMEMREC_EPISODE_MS=0 every failure is an episode). A set belongs to the
// thread that acquired it until its bundle is written (freeze_done).
#pragma once
#include <cstddef>
#include <cstdint>

#include "common/event.h"
#include "shim/record/live_table.h"

namespace gpumemrec {

struct Recorder;

struct FrozenState {
  Event* events = nullptr;  // the ring before the cut, seq order, holes left out
  uint64_t event_count = 0;
  LiveEntry* live = nullptr;  // device/managed allocations, then VMM handles
  uint64_t live_count = 0;
  uint64_t end_seq = 1;  // the cut: one past the newest claimed seq
};

constexpr uint64_t kLiveReserve = 65536;
// Sets 0 and 1 are the failures' (freeze_acquire); set kInlineSet belongs to
// whoever holds the dump slot and writes on its own thread (signal and exit
// dumps): those never wait for a failure's set, and a failure's job, holding
// its set, may wait for the slot without a deadlock.
constexpr int kFreezeSets = 3;
constexpr int kPooledSets = 2;
constexpr int kInlineSet = 2;

// From start-up: reserves the regions for a ring of `ring_capacity` events.
bool freeze_init(uint64_t ring_capacity);
// A free pooled set (lock-free), or -1 when both hold a frozen state not yet
// written.
int freeze_acquire();
// Copies the live tables and the ring into set `set`. False (and *why)
// when the live copy cannot get the memory it needs (the set stays the
// caller's: freeze_done).
bool freeze(Recorder* r, int set, FrozenState* out, const char** why);
// The job of the set is over: the set is free again (its pages stay for the
// next freeze, except the inline set's).
void freeze_done(int set);
// The free pooled sets' pages go back to the kernel (the writer calls it
// after kTrimIdleMs without a job).
void freeze_trim();
constexpr unsigned kTrimIdleMs = 5000;
// A forked child: every set is free (the parent's writer is not here).
void freeze_atfork_child();

}  // namespace gpumemrec
