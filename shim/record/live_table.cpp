#include "shim/record/live_table.h"

#include <cstdlib>
#include <cstring>

namespace gpumemrec {

LiveTable::~LiveTable() {
  for (auto& s : shards_) std::free(s.slots);
}

LiveEntry* LiveTable::probe(Shard& s, uint64_t key, uint64_t h, bool for_insert) {
  if (s.capacity == 0) return nullptr;
  uint64_t mask = s.capacity - 1;
  LiveEntry* first_tomb = nullptr;
  for (uint64_t i = h & mask, n = 0; n < s.capacity; i = (i + 1) & mask, ++n) {
    LiveEntry* e = &s.slots[i];
    if (e->key == key) return e;
    if (e->key == 0) return for_insert ? (first_tomb ? first_tomb : e) : nullptr;
    if (e->key == kTombstone && !first_tomb) first_tomb = e;
  }
  return for_insert ? first_tomb : nullptr;
}

bool LiveTable::grow(Shard& s) {
  uint64_t cap = s.capacity ? s.capacity * 2 : 64;
  // Same size again is enough when most used slots are tombstones.
  if (s.capacity && s.live * 2 < s.capacity) cap = s.capacity;
  auto* slots = static_cast<LiveEntry*>(std::calloc(cap, sizeof(LiveEntry)));
  if (!slots) return false;
  Shard fresh;
  fresh.slots = slots;
  fresh.capacity = cap;
  for (uint64_t i = 0; i < s.capacity; ++i) {
    const LiveEntry& e = s.slots[i];
    if (e.key == 0 || e.key == kTombstone) continue;
    LiveEntry* dst = probe(fresh, e.key, hash(e.key), true);
    *dst = e;
    ++fresh.used;
  }
  std::free(s.slots);
  s.slots = fresh.slots;
  s.capacity = fresh.capacity;
  s.used = fresh.used;
  s.live = fresh.used;
  return true;
}

bool LiveTable::insert(const LiveEntry& e) {
  uint64_t h = hash(e.key);
  Shard& s = shard_for(h);
  SpinGuard g(s.lock);
  if ((s.used + 1) * 10 > s.capacity * 7 && !grow(s)) return false;
  LiveEntry* slot = probe(s, e.key, h, true);
  if (!slot) return false;
  if (slot->key == 0) {
    ++s.used;
    ++s.live;
  } else if (slot->key == kTombstone) {
    ++s.live;
  }
  *slot = e;
  return true;
}

bool LiveTable::lookup(uint64_t key, LiveEntry* out, bool take) {
  if (key == 0 || key == kTombstone) return false;
  uint64_t h = hash(key);
  Shard& s = shard_for(h);
  SpinGuard g(s.lock);
  LiveEntry* slot = probe(s, key, h, false);
  if (!slot) return false;
  if (out) *out = *slot;
  if (take) {
    slot->key = kTombstone;
    --s.live;
  }
  return true;
}

uint64_t LiveTable::count() const {
  uint64_t n = 0;
  for (auto& s : const_cast<Shard(&)[kShards]>(shards_)) {
    SpinGuard g(s.lock);
    n += s.live;
  }
  return n;
}

void LiveTable::snapshot(std::vector<LiveEntry>* out) {
  for (auto& s : shards_) {
    SpinGuard g(s.lock);
    for (uint64_t i = 0; i < s.capacity; ++i) {
      const LiveEntry& e = s.slots[i];
      if (e.key != 0 && e.key != kTombstone) out->push_back(e);
    }
  }
}

void LiveTable::lock_all() {
  for (auto& s : shards_) s.lock.lock();
}

void LiveTable::unlock_all() {
  for (auto& s : shards_) s.lock.unlock();
}

}  // namespace gpumemrec
