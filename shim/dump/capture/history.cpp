#include "shim/dump/capture/history.h"

#include <map>

namespace gpumemrec {

void make_history_consistent(Event* events, size_t count, const std::vector<LiveEntry>& live_at_cut) {
  // Running totals per device (event_device(): -1 for unknown devices),
  // started at the base: final total minus every change in the cut.
  std::map<int, int64_t> running;
  for (const LiveEntry& a : live_at_cut)
    if (MemoryType(a.memory_type) != MemoryType::kMapping) running[a.device] += int64_t(a.size);
  for (size_t i = 0; i < count; ++i) running[event_device(events[i])] -= event_memory_change(events[i]);
  uint64_t latest_ns = 0;
  for (size_t i = 0; i < count; ++i) {
    Event& e = events[i];
    int64_t& total = running[event_device(e)];
    total += event_memory_change(e);
    e.live_after = total < 0 ? 0 : uint64_t(total);
    if (e.time_ns < latest_ns) e.time_ns = latest_ns;
    latest_ns = e.time_ns;
  }
}

}  // namespace gpumemrec
