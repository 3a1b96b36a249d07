#include "shim/dump/capture/history.h"

#include <map>
#include <unordered_map>

namespace gpumemrec {

namespace {

// Bytes that leave a device's total just before event i although the
// window holds no free for them: an earlier allocation of the window at
// the same address (or VMM handle) that nothing in the window freed. Its
// free was in flight: a free is recorded after the real free returned, and
// a thread preempted in between (seconds, on a loaded machine) had not
// written it when the window was copied (freeze.cpp, copy_events waits
// 2 ms at most for slots being written). The driver handed the
// address out again, so the free came before this allocation: at the
// latest, just before it. Without this the window's changes outnumber
// the live set at the cut, the base goes negative and every total before
// the re-allocation reads too low (clamped at 0).
struct ImpliedFree {
  int device = -1;
  int64_t bytes = 0;
};

std::vector<ImpliedFree> implied_frees(const Event* events, size_t count) {
  std::vector<ImpliedFree> out(count);
  std::unordered_map<uint64_t, size_t> open;  // key -> index of its allocation in the window
  for (size_t i = 0; i < count; ++i) {
    const Event& e = events[i];
    if (!e.address) continue;
    const uint64_t key = e.address ^ (event_memory_type(e) == MemoryType::kPhysical ? 1ull << 63 : 0);
    const int64_t change = event_memory_change(e);
    if (change > 0) {
      auto [it, fresh] = open.emplace(key, i);
      if (!fresh) {
        out[i] = ImpliedFree{event_device(events[it->second]), event_memory_change(events[it->second])};
        it->second = i;
      }
    } else if (change < 0) {
      open.erase(key);
    }
  }
  return out;
}

}  // namespace

void make_history_consistent(Event* events, size_t count, const std::vector<LiveEntry>& live_at_cut) {
  const std::vector<ImpliedFree> implied = implied_frees(events, count);
  // Running totals per device (event_device(): -1 for unknown devices),
  // started at the base: final total minus every change in the cut.
  std::map<int, int64_t> running;
  for (const LiveEntry& a : live_at_cut)
    if (MemoryType(a.memory_type) != MemoryType::kMapping) running[a.device] += int64_t(a.size);
  for (size_t i = 0; i < count; ++i) {
    running[event_device(events[i])] -= event_memory_change(events[i]);
    if (implied[i].bytes) running[implied[i].device] += implied[i].bytes;
  }
  for (size_t i = 0; i < count; ++i) {
    Event& e = events[i];
    if (implied[i].bytes) running[implied[i].device] -= implied[i].bytes;
    int64_t& total = running[event_device(e)];
    total += event_memory_change(e);
    e.live_after = total < 0 ? 0 : uint64_t(total);
  }
}

}  // namespace gpumemrec
