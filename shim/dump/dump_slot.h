// One bundle is written at a time, by whichever thread holds the dump slot.
//
// The slot remembers which thread holds it and why (so that exit() called on
// the dumping thread itself, e.g. from a signal handler that interrupted the
// dump, does not wait for a dump that can never finish), and the temporary
// directory the holder is writing (so that such an exit removes it).
// Acquiring never blocks; waiting is explicit and bounded by the caller.
#pragma once
#include <cstdint>

#include "shim/record/failure.h"

namespace gpumemrec {

// False if another thread (or this one, re-entered) holds the slot, or if the
// reason is a failure (oom, limit, fail-after) while an on-demand request
// waits for the slot (see dump_slot_want); then
// dump_slot_last_try_was_busy() is true for this thread.
bool dump_slot_try_acquire(DumpReason reason);
// An on-demand (signal) request waits for the slot: until the matching
// dump_slot_want(false), failure dumps yield to it, so that threads that keep
// failing cannot starve it.
void dump_slot_want(bool waiting);
void dump_slot_release();

bool dump_slot_busy();
bool dump_slot_held_by_this_thread();
// True while the holder writes an out-of-memory bundle (reason oom, limit,
// fail-after), false for signal and exit dumps or when free.
bool dump_slot_holder_is_failure();
// Whether this thread's last dump_slot_try_acquire() failed because the slot
// was taken (as opposed to succeeding, or no attempt).
bool dump_slot_last_try_was_busy();

// Waits until the slot is free (and, with yield_to_requests, no on-demand
// request waits for it any more), at most max_ms (<0: forever). Returns false
// at once when this thread holds it (it cannot become free while we wait).
bool dump_slot_wait_free(int max_ms, bool yield_to_requests);

// The temporary bundle directory the holder is writing (dirfd stays owned by
// the holder); cleared by release.
void dump_slot_note_tmp(int dirfd, const char* tmp_name);
// For the exit path on the holder's own thread: the directory and name, if
// any (name copied into buf).
bool dump_slot_tmp(int* dirfd, char* buf, unsigned long size);

void dump_slot_reset_after_fork();

}  // namespace gpumemrec
