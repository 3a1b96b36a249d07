#include "shim/dump/capture/dump_snapshot.h"

#include <algorithm>

#include "shim/dump/capture/history.h"
#include "shim/dump/capture/reconciler.h"

namespace gpumemrec {

namespace {

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
  std::sort(s->stack_ids.begin(), s->stack_ids.end());
  s->stack_ids.erase(std::unique(s->stack_ids.begin(), s->stack_ids.end()), s->stack_ids.end());
}

}  // namespace

void finish_snapshot(const FrozenState& frozen, const FailureInfo* failure, const std::vector<uint32_t>& extra_stacks,
                     DumpSnapshot* out) {
  Reconciler reconciler(std::vector<LiveEntry>(frozen.live, frozen.live + frozen.live_count));
  out->end_seq = frozen.end_seq;
  out->events = EventSpan{frozen.events, size_t(frozen.event_count)};
  out->event_count = frozen.event_count;
  for (const Event& e : out->events) reconciler.apply(e);
  out->live = reconciler.finish();
  make_history_consistent(out->events.data, out->events.count, out->live);
  add_totals_and_stacks(failure, extra_stacks, out);
}

}  // namespace gpumemrec
