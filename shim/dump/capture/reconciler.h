// Reconciling the live tables' snapshot with the ring (docs/reliability.md,
// section 2). The live tables are copied first, then the ring is cut; while
// the shards were copied other threads kept allocating and freeing, so the
// copy can miss an allocation whose event is in the ring, or still list one
// whose free is. Replaying the ring's events over the copy fixes both:
//  - an allocation whose event is in the ring and not freed there is listed,
//    even if the copy missed it;
//  - an allocation whose free event is in the ring is not listed;
//  - an older entry at an address the ring re-allocates is superseded.
// Addresses and VMM handles are separate key spaces (a handle can equal an
// address); "mapping" events and failed allocations (address 0) change nothing.
//
// Only the entries whose address the ring names can change: those are
// indexed (a hash map, built in one pass over the snapshot), the others are
// left where they are. A live set of 2.1M with a 65,536-event ring used to
// be sorted by address first (0.6 s of a dump on a loaded machine).
#pragma once
#include <cstddef>
#include <unordered_map>
#include <vector>

#include "common/event.h"
#include "shim/record/live_table.h"

namespace gpumemrec {

class Reconciler {
 public:
  // `live`: the live tables' snapshot, taken before the ring's cut;
  // `ring`: the events that apply() will be given (their addresses are what
  // gets indexed).
  Reconciler(std::vector<LiveEntry> live, const Event* ring, size_t count);
  // Each event of the cut, in time order (event_order.h: seq is not time
  // order across threads). "Older" and "newer" below are that order: a live
  // entry keeps its allocating event's time and seq.
  void apply(const Event& e);
  // The reconciled live set, largest first (then oldest first, event_order.h).
  std::vector<LiveEntry> finish();

 private:
  LiveEntry* find(uint64_t key, bool physical);
  void on_alloc(const Event& e, bool physical);
  // Removes the entries of added_ at e's address (and key space) older than e.
  void drop_added_before(const Event& e, bool physical);
  void on_free(const Event& e, bool physical);

  static uint64_t slot_key(uint64_t key, bool physical) { return key ^ (physical ? 1ull << 63 : 0); }

  std::vector<LiveEntry> live_;
  // (key, physical) -> index in live_, for the keys the ring names.
  std::unordered_map<uint64_t, size_t> index_;
  std::vector<LiveEntry> added_;  // allocations the snapshot missed
};

}  // namespace gpumemrec
