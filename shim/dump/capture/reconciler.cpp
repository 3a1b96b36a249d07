#include "shim/dump/capture/reconciler.h"

#include <algorithm>
#include <climits>

namespace gpumemrec {

namespace {

constexpr int16_t kDead = INT16_MIN;  // marks a superseded or freed entry

bool is_physical(uint8_t memory_type) { return MemoryType(memory_type) == MemoryType::kPhysical; }

bool by_key(const LiveEntry& a, const LiveEntry& b) {
  const bool pa = is_physical(a.memory_type), pb = is_physical(b.memory_type);
  return pa != pb ? pa < pb : a.key < b.key;
}

}  // namespace

Reconciler::Reconciler(std::vector<LiveEntry> live) : live_(std::move(live)) {
  std::sort(live_.begin(), live_.end(), by_key);
}

LiveEntry* Reconciler::find(uint64_t key, bool physical) {
  LiveEntry probe;
  probe.key = key;
  probe.memory_type = uint8_t(physical ? MemoryType::kPhysical : MemoryType::kDevice);
  auto it = std::lower_bound(live_.begin(), live_.end(), probe, by_key);
  if (it == live_.end() || it->key != key || is_physical(it->memory_type) != physical) return nullptr;
  return &*it;
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
    if (le->seq >= e.seq) return;  // listed (or re-allocated later)
    le->device = kDead;            // an older entry at this address: superseded
  }
  added_.push_back(live_entry_from_event(e));
}

void Reconciler::on_free(const Event& e, bool physical) {
  LiveEntry* le = find(e.address, physical);
  if (le && le->device != kDead && le->seq < e.seq) le->device = kDead;
  for (size_t i = 0; i < added_.size();) {
    const LiveEntry& a = added_[i];
    if (a.key == e.address && is_physical(a.memory_type) == physical && a.seq < e.seq) {
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
    return a.size != b.size ? a.size > b.size : a.seq < b.seq;
  });
  return std::move(live_);
}

}  // namespace gpumemrec
