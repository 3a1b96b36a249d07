// Step 2 of a dump (write/bundle_writer.h), on the writer: what the model is built from. The
// frozen state (freeze.h: live tables copied first, then the ring cut and
// its events) is reconciled (reconciler.h) and its events made one
// consistent history (history.h), in place. Everything after this step reads
// this snapshot only, never the recorder's live state again.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "common/event.h"
#include "shim/dump/capture/freeze.h"
#include "shim/dump/capture/peak_finish.h"
#include "shim/record/failure.h"
#include "shim/record/live_table.h"

namespace gpumemrec {

// The frozen events, in place (no copy: they can be 64 MiB).
struct EventSpan {
  Event* data = nullptr;
  size_t count = 0;
  Event* begin() const { return data; }
  Event* end() const { return data + count; }
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
};

struct DumpSnapshot {
  EventSpan events;                // the ring before the cut, time order (event_order.h), holes left out
  uint64_t event_count = 0;        // events.size(), kept once the frozen events are gone
  std::vector<LiveEntry> live;     // reconciled live set, largest first
  uint64_t end_seq = 1;            // the cut: one past the newest claimed seq
  std::vector<uint32_t> stack_ids; // every stack referred to, sorted, unique
  std::map<int, uint64_t> live_by_device;
  uint64_t live_bytes = 0;
  uint64_t live_count = 0;
  PeakReport peak;                 // peak.json (present when finish_snapshot was given a PeakInput)
};

// `failure` (may be null) and `extra_stacks` (recovered failures listed in
// the metadata) add their stacks to stack_ids. The frozen events are
// put in wall time and time order and rewritten in place (event_order.h,
// history.h).
// `peak` (may be null): the keeper's copy, for out->peak (its sites' stacks
// are added to stack_ids).
void finish_snapshot(const FrozenState& frozen, const FailureInfo* failure, const std::vector<uint32_t>& extra_stacks,
                     DumpSnapshot* out, const PeakInput* peak = nullptr);

}  // namespace gpumemrec
