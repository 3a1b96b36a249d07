#include "shim/dump/capture/in_flight.h"

#include <algorithm>

#include "shim/dump/capture/event_order.h"

namespace gpumemrec {

namespace {

bool in_window(const LiveEntry& a, const WindowBounds& w) {
  return MemoryType(a.memory_type) != MemoryType::kMapping && a.seq >= w.first_seq && a.seq < w.end_seq &&
         a.time_ns >= w.from_ns && a.time_ns <= w.to_ns;
}

Event event_from_live_entry(const LiveEntry& a) {
  Event e{};
  e.seq = a.seq;
  e.time_ns = a.time_ns;
  e.address = a.key;
  e.size = a.size;
  e.stack_id = a.stack_id;
  e.tid = a.tid & 0xFFFFFFu;
  e.device1 = a.device >= 0 ? uint8_t(a.device + 1) : 0;
  e.api = a.api;
  e.kind_type = pack_kind_type(EventKind::kAlloc, MemoryType(a.memory_type));
  return e;
}

}  // namespace

size_t add_in_flight_allocations(Event* events, size_t count, size_t room, const std::vector<LiveEntry>& live,
                                 const WindowBounds& w) {
  // Most live entries are older than the window: the seqs are sorted only
  // when one might be missing.
  std::vector<uint64_t> seqs;
  size_t n = count;
  for (const LiveEntry& a : live) {
    if (!in_window(a, w)) continue;
    if (seqs.empty() && count) {
      seqs.reserve(count);
      for (size_t i = 0; i < count; ++i) seqs.push_back(events[i].seq);
      std::sort(seqs.begin(), seqs.end());
    }
    if (std::binary_search(seqs.begin(), seqs.end(), a.seq) || n >= room) continue;
    events[n++] = event_from_live_entry(a);
  }
  if (n == count) return n;
  auto less = [](const Event& a, const Event& b) { return earlier(a, b); };
  std::sort(events + count, events + n, less);
  std::inplace_merge(events, events + count, events + n, less);
  return n;
}

}  // namespace gpumemrec
