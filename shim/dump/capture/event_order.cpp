#include "shim/dump/capture/event_order.h"

#include <algorithm>

namespace gpumemrec {

size_t order_events(Event* events, size_t count, uint64_t from_ns, uint64_t to_ns, int64_t wall_offset_ns) {
  size_t kept = 0;
  for (size_t i = 0; i < count; ++i) {
    if (events[i].time_ns < from_ns || events[i].time_ns > to_ns) continue;
    events[kept] = events[i];
    events[kept].time_ns = uint64_t(int64_t(events[kept].time_ns) + wall_offset_ns);
    ++kept;
  }
  auto less = [](const Event& a, const Event& b) { return earlier(a, b); };
  if (!std::is_sorted(events, events + kept, less)) std::sort(events, events + kept, less);
  return kept;
}

}  // namespace gpumemrec
