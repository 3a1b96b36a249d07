// Step 1 of a dump: what the bundle is written from, taken once.
// The live tables are copied first, then the ring is cut (ring.end() read
// after the copy) and the events before the cut are copied out of the ring;
// the copy is reconciled with the events (reconciler.h) and the events are
// made one consistent history (history.h). Everything after this step reads
// this snapshot only, never the recorder's live state again.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "common/event.h"
#include "shim/record/failure.h"
#include "shim/record/live_table.h"

namespace gpumemrec {

struct Recorder;

struct DumpSnapshot {
  std::vector<Event> events;       // the ring before the cut, seq order, holes left out
  std::vector<LiveEntry> live;     // reconciled live set, largest first
  uint64_t end_seq = 1;            // the cut: one past the newest claimed seq
  std::vector<uint32_t> stack_ids; // every stack referred to, sorted, unique
  std::map<int, uint64_t> live_by_device;
  uint64_t live_bytes = 0;
  uint64_t live_count = 0;
};

// `failure` (may be null) adds its stack to stack_ids.
void take_snapshot(Recorder* r, const FailureInfo* failure, DumpSnapshot* out);

}  // namespace gpumemrec
