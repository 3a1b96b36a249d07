#include "shim/dump/capture/reconciler.h"

#include <algorithm>
#include <climits>

#include "shim/dump/capture/event_order.h"

namespace gpumemrec {

namespace {

constexpr int16_t kDead = INT16_MIN;  // marks a superseded or freed entry

bool is_physical(uint8_t memory_type) { return MemoryType(memory_type) == MemoryType::kPhysical; }

}  // namespace

Reconciler::Reconciler(std::vector<LiveEntry> live, const Event* ring, size_t count) : live_(std::move(live)) {
  // Every address the ring names, then the snapshot's entries at them (the
  // first one, as the live tables hold one entry per key).
  constexpr size_t kNone = ~size_t(0);
  index_.reserve(count);
  for (size_t i = 0; i < count; ++i)
    if (ring[i].address) index_.emplace(slot_key(ring[i].address, event_memory_type(ring[i]) == MemoryType::kPhysical), kNone);
  if (index_.empty()) return;
  for (size_t i = 0; i < live_.size(); ++i) {
    auto it = index_.find(slot_key(live_[i].key, is_physical(live_[i].memory_type)));
    if (it != index_.end() && it->second == kNone) it->second = i;
  }
}

LiveEntry* Reconciler::find(uint64_t key, bool physical) {
  auto it = index_.find(slot_key(key, physical));
  if (it == index_.end() || it->second >= live_.size()) return nullptr;
  return &live_[it->second];
}

void Reconciler::apply(const Event& e) {
  const MemoryType t = event_memory_type(e);
  if (t == MemoryType::kMapping || e.address == 0) return;
  const EventKind k = event_kind(e);
  if (k == EventKind::kAlloc) on_alloc(e, t == MemoryType::kPhysical);
  else if (k == EventKind::kFree) on_free(e, t == MemoryType::kPhysical);
}

void Reconciler::on_alloc(const Event& e, bool physical) {
  LiveEntry* le = find(e.address, physical);
  if (le && le->device != kDead) {
    if (le->seq == e.seq || !earlier(*le, e)) return;  // listed (or re-allocated later)
    le->device = kDead;            // an older entry at this address: superseded
  }
  // An older allocation at this address that only the window named, whose
  // free is not in it (in flight at the copy, history.cpp "implied frees"):
  // the driver handed the address out again, so it was freed.
  drop_added_before(e, physical);
  added_.push_back(live_entry_from_event(e));
}

void Reconciler::on_free(const Event& e, bool physical) {
  LiveEntry* le = find(e.address, physical);
  if (le && le->device != kDead && earlier(*le, e)) le->device = kDead;
  drop_added_before(e, physical);
}

void Reconciler::drop_added_before(const Event& e, bool physical) {
  for (size_t i = 0; i < added_.size();) {
    const LiveEntry& a = added_[i];
    if (a.key == e.address && is_physical(a.memory_type) == physical && earlier(a, e)) {
      added_[i] = added_.back();
      added_.pop_back();
    } else {
      ++i;
    }
  }
}

std::vector<LiveEntry> Reconciler::finish() {
  live_.erase(std::remove_if(live_.begin(), live_.end(), [](const LiveEntry& a) { return a.device == kDead; }),
              live_.end());
  live_.insert(live_.end(), added_.begin(), added_.end());
  added_.clear();
  std::sort(live_.begin(), live_.end(), [](const LiveEntry& a, const LiveEntry& b) {
    if (a.size != b.size) return a.size > b.size;
    return earlier(a.time_ns, a.seq, b.time_ns, b.seq);
  });
  return std::move(live_);
}

}  // namespace gpumemrec
