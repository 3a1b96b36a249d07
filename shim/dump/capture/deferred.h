// Failures that opened an episode while both frozen sets were taken.
//
// A set is held by a job until its bundle is written (or, for a recovered
// episode under GPUMEMREC_RECOVERED=count, until its verdict): so a burst of
// episodes while the writer is slow (a big ring, a slow disk, a process
// under a sanitizer) finds no set. Such a failure is not dropped: its record
// (what failed, the device's numbers asked on the failing thread) waits in
// one of kSlots slots, with one job in the writer's queue, and the writer
// freezes the state when a set comes free: later than the failure (the
// bundle says by how much), but a fatal episode never goes without a bundle
// because others were being written.
//
// When every slot is taken, a new failure replaces a record whose episode
// has already recovered (the caller decides which: `replaceable`): the
// newest episode is the one that may turn out fatal. So a burst of any
// length still ends with its last episode's bundle.
//
// A slot's states: free -> filling -> queued (one job posted for it) ->
// running (the writer took it) -> free, or back to queued (posted again).
// A replacement goes queued -> filling -> queued and posts nothing: the job
// already posted runs the new record.
#pragma once
#include <atomic>
#include <cstdint>

#include "shim/dump/query/device_query.h"
#include "shim/record/failure.h"

namespace gpumemrec {

struct DeferredFailure {
  FailureInfo failure;
  uint64_t episode = 0;
  DeviceReport devices;
  unsigned requeued = 0;  // times posted again: the sets were held by later jobs
};

class DeferredFailures {
 public:
  static constexpr int kSlots = 4;

  struct Put {
    int slot = -1;             // -1: every slot holds an episode not decided yet
    bool replaced = false;     // true: the slot's job is already posted
    uint64_t evicted = 0;      // the episode whose record was replaced
  };
  // On the failing thread. `replaceable(episode)`: that episode's record may
  // give way (it recovered). Allocates (the device list), like the freeze.
  Put put(const DeferredFailure& d, bool (*replaceable)(uint64_t episode));

  // The writer, for the job of `slot`: the record, now its own (waits while
  // a failing thread is still filling it; null if none is queued there).
  DeferredFailure* take(int slot);
  void requeue(int slot);  // back to queued: the caller posts its job again
  void done(int slot);     // free

  void reset();  // a forked child: no writer, no record

 private:
  enum : int { kFree = 0, kFilling, kQueued, kRunning };
  bool claim(int slot, int from);                  // from -> filling
  void write(int slot, const DeferredFailure& d);  // filling -> queued
  std::atomic<int> state_[kSlots] = {};
  DeferredFailure records_[kSlots];
};

}  // namespace gpumemrec
