// Reading the whole live table: its count, a copy (the out-of-memory
// freeze), and the fork locks. Nurseries first, then the shards, each under
// its own lock only: the program's threads keep recording meanwhile, so an
// entry can move from a nursery to a shard between the two copies and be
// seen twice, and a key the driver handed out again while we still listed
// it (live_table.h) can be in two places. SnapshotDedupe keeps each key
// once, the newer allocation, without a pass over the whole copy: only the
// shards that a young key hashes to are checked.
#include "shim/record/live_table.h"

namespace gpumemrec {

// The young (nursery) entries of one snapshot, indexed by key in the
// table's dedupe_ array (open addressing; the young entries are at most
// kNurseries * kNurserySlots, half of its slots). A dropped young entry has
// its key set to 0 in the copy; compact() fills those holes.
class SnapshotDedupe {
 public:
  SnapshotDedupe(LiveTable& t, LiveEntry* out, uint64_t young) : slots_(t.dedupe_), out_(out), young_(young) {
    for (int i = 0; i < LiveTable::kDedupeSlots; ++i) slots_[i] = 0;
    for (uint64_t i = 0; i < young; ++i) add(i);
  }
  // Whether shard `shard` may hold a key of a young entry.
  bool may_hold(int shard) const { return (shard_mask_ >> shard) & 1; }
  // Drops from out[from, to) the entries a young one supersedes and the
  // young ones superseded by them; returns the new end.
  uint64_t filter(uint64_t from, uint64_t to) {
    uint64_t end = from;
    for (uint64_t k = from; k < to; ++k) {
      uint16_t* s = find(out_[k].key);
      if (*s != 0) {
        LiveEntry& young = out_[*s - 1];
        if (newer_or_same(young, out_[k])) continue;  // the copy from the nursery stands
        young.key = 0;  // its slot stays: a key 0 never matches, so probes go past it
      }
      if (end != k) out_[end] = out_[k];
      ++end;
    }
    return end;
  }
  // Fills the holes of dropped young entries from the end; the new count.
  uint64_t compact(uint64_t n) {
    for (uint64_t i = 0; i < young_ && i < n; ++i) {
      while (n > i && out_[i].key == 0) {
        out_[i] = out_[n - 1];
        --n;
      }
    }
    return n;
  }

 private:
  static constexpr uint64_t kMask = LiveTable::kDedupeSlots - 1;
  static_assert((LiveTable::kDedupeSlots & kMask) == 0, "a power of two");

  uint16_t* find(uint64_t key) {
    uint64_t i = LiveTable::hash(key) & kMask;
    while (slots_[i] != 0 && out_[slots_[i] - 1].key != key) i = (i + 1) & kMask;
    return &slots_[i];
  }
  void add(uint64_t i) {
    const uint64_t key = out_[i].key;
    shard_mask_ |= uint64_t(1) << (LiveTable::hash(key) >> 58);
    uint16_t* s = find(key);
    if (*s != 0) {  // in two nurseries: the newer stays
      LiveEntry& other = out_[*s - 1];
      if (newer_or_same(other, out_[i])) {
        out_[i].key = 0;
        return;
      }
      other.key = 0;
    }
    *s = uint16_t(i + 1);
  }

  uint16_t* slots_;
  LiveEntry* out_;
  uint64_t young_;
  uint64_t shard_mask_ = 0;
};

uint64_t LiveTable::count() const {
  uint64_t n = 0;
  for (auto& s : const_cast<Shard(&)[kShards]>(shards_)) {
    SpinGuard g(s.lock);
    n += s.live;
  }
  for (const Nursery& y : nurseries_) n += y.count.load(std::memory_order_relaxed);
  return n;
}

template <typename Visit>
void LiveTable::for_each_entry(Shard& s, Visit&& visit) {
  for (uint64_t* keys : {s.keys, s.old_keys}) {
    if (!keys) continue;
    uint64_t cap = keys == s.keys ? s.capacity : s.old_capacity;
    const LiveEntry* vals = entries(keys, cap);
    for (uint64_t i = 0; i < cap; ++i)
      if (keys[i] != 0 && keys[i] != kMoved) visit(vals[i]);
  }
}

void LiveTable::snapshot(std::vector<LiveEntry>* out) {
  std::vector<LiveEntry> copy;
  for (uint64_t extra = 1024;; extra *= 2) {
    copy.resize(count() + extra);
    const uint64_t n = snapshot_into(copy.data(), copy.size());
    if (n == UINT64_MAX) continue;
    out->insert(out->end(), copy.begin(), copy.begin() + long(n));
    return;
  }
}

uint64_t LiveTable::snapshot_into(LiveEntry* out, uint64_t cap) {
  SpinGuard one(snapshot_lock_);
  uint64_t n = 0;
  for (Nursery& y : nurseries_) {
    SpinGuard g(y.lock);
    if (n + kNurserySlots > cap) return UINT64_MAX;
    for (int i = 0; i < kNurserySlots; ++i)
      if (y.keys[i].load(std::memory_order_relaxed) != 0) out[n++] = y.entries[i];
  }
  SnapshotDedupe young(*this, out, n);
  for (int k = 0; k < kShards; ++k) {
    Shard& s = shards_[k];
    SpinGuard g(s.lock);
    if (n + s.live > cap) return UINT64_MAX;
    const uint64_t from = n;
    for_each_entry(s, [&](const LiveEntry& e) { out[n++] = e; });
    if (young.may_hold(k)) n = young.filter(from, n);
  }
  return young.compact(n);
}

// Order: the snapshot lock, the nurseries, the shards (a move takes a
// nursery then a shard; a snapshot holds one lock besides its own at a
// time).
void LiveTable::lock_all() {
  snapshot_lock_.lock();
  for (auto& y : nurseries_) y.lock.lock();
  for (auto& s : shards_) s.lock.lock();
}

void LiveTable::unlock_all() {
  for (auto& s : shards_) s.lock.unlock();
  for (auto& y : nurseries_) y.lock.unlock();
  snapshot_lock_.unlock();
}

}  // namespace gpumemrec
