#include "shim/dump/capture/dump_snapshot.h"

#include <algorithm>

#include "shim/dump/capture/event_order.h"
#include "shim/dump/capture/history.h"
#include "shim/dump/capture/in_flight.h"
#include "shim/dump/capture/reconciler.h"

namespace gpumemrec {

namespace {

// Sorted, each once. Ids are small (the stack table's slots): a mark per id
// instead of sorting one id per live allocation (2.1M of them).
// (StackTable::kFull, the largest id, is marked apart.)
void sort_unique(std::vector<uint32_t>* ids) {
  constexpr uint32_t kMarked = 1u << 22;  // 4 MiB of marks at most
  uint32_t top = 0;
  for (uint32_t id : *ids)
    if (id < kMarked && id > top) top = id;
  std::vector<uint8_t> seen(size_t(top) + 1, 0);
  std::vector<uint32_t> big;
  for (uint32_t id : *ids) {
    if (id < kMarked) seen[id] = 1;
    else big.push_back(id);
  }
  std::sort(big.begin(), big.end());
  big.erase(std::unique(big.begin(), big.end()), big.end());
  ids->clear();
  for (uint32_t id = 0; id <= top; ++id)
    if (seen[id]) ids->push_back(id);
  ids->insert(ids->end(), big.begin(), big.end());
}

void add_totals_and_stacks(const FailureInfo* f, const std::vector<uint32_t>& extra, DumpSnapshot* s) {
  for (const Event& e : s->events)
    if (e.stack_id) s->stack_ids.push_back(e.stack_id);
  for (const LiveEntry& a : s->live) {
    if (MemoryType(a.memory_type) == MemoryType::kMapping) continue;
    s->live_by_device[a.device] += a.size;
    s->live_bytes += a.size;
    ++s->live_count;
    if (a.stack_id) s->stack_ids.push_back(a.stack_id);
  }
  if (f && f->stack_id) s->stack_ids.push_back(f->stack_id);
  for (uint32_t id : extra)
    if (id) s->stack_ids.push_back(id);
}

// After finish_peak_live: stacks.json resolves the peak's sites even when
// nothing live uses them.
void add_peak_stacks(DumpSnapshot* s) {
  for (const PeakDevice& d : s->peak.devices) {
    for (const PeakSite& site : d.sites)
      if (site.stack_id) s->stack_ids.push_back(site.stack_id);
    if (d.after_gap)
      for (const PeakSite& site : d.after_gap->figure.sites)
        if (site.stack_id) s->stack_ids.push_back(site.stack_id);
  }
}

// The window's bounds in wall time, as order_events left its events.
WindowBounds window_bounds(const FrozenState& f) {
  auto wall = [&](uint64_t mono) { return uint64_t(int64_t(mono) + f.wall_offset_ns); };
  WindowBounds w;
  w.first_seq = f.first_seq;
  w.end_seq = f.end_seq;
  w.from_ns = f.complete_from_ns ? wall(f.complete_from_ns) : 0;
  w.to_ns = f.cut_ns == UINT64_MAX ? UINT64_MAX : wall(f.cut_ns);
  return w;
}

}  // namespace

void finish_snapshot(const FrozenState& frozen, const FailureInfo* failure, const std::vector<uint32_t>& extra_stacks,
                     DumpSnapshot* out, const PeakInput* peak) {
  // Wall time and time order first (event_order.h): the reconciler and the
  // history replay events in the order they happened.
  // Events older than the moment the window is complete from are left out
  // (claim_marks.h): their history may lack an event of a lower seq; so
  // are events after the cut (freeze.h).
  // First, on the events as copied: the history below rewrites the word
  // freed_stack shares (event.h).
  if (peak) finish_peak(*peak, frozen, &out->peak);
  size_t count = order_events(frozen.events, size_t(frozen.event_count), frozen.complete_from_ns, frozen.cut_ns,
                              frozen.wall_offset_ns);
  std::vector<LiveEntry> live(frozen.live, frozen.live + frozen.live_count);
  for (LiveEntry& a : live) a.time_ns = uint64_t(int64_t(a.time_ns) + frozen.wall_offset_ns);
  count = add_in_flight_allocations(frozen.events, count, size_t(frozen.event_room), live, window_bounds(frozen));
  Reconciler reconciler(std::move(live), frozen.events, count);
  out->end_seq = frozen.end_seq;
  out->events = EventSpan{frozen.events, count};
  out->event_count = count;
  for (const Event& e : out->events) reconciler.apply(e);
  out->live = reconciler.finish();
  make_history_consistent(out->events.data, out->events.count, out->live);
  add_totals_and_stacks(failure, extra_stacks, out);
  if (peak) finish_peak_live(out->live, out->live_by_device, out->events.data, out->events.count, frozen, &out->peak);
  add_peak_stacks(out);
  sort_unique(&out->stack_ids);
}

}  // namespace gpumemrec
