// Reading the whole live table: its count, a copy (the out-of-memory
// freeze), and the fork locks. Each home is copied under its own lock
// only: the program's threads keep recording meanwhile, so a key can be
// freed from one home after its copy and handed out again into another
// before that one's copy, and a key the driver handed out again while we
// still listed it (live_table.h) can be in two homes. Within one home each
// key is once (an insert replaces). So the fullest home is copied first and
// only the entries of the others are indexed (SnapshotIndex): a key twice
// in the copy has at least one of its entries there. The newer allocation
// stays.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "shim/record/live_table.h"

namespace gpumemrec {

// An open-addressing index (index + 1 of an entry of `out`; 0 = empty) over
// the table's scratch_ slots. A dropped entry gets key 0: a slot is always
// moved to the entry that beat the one it held, so no probe stops at one.
class SnapshotIndex {
 public:
  SnapshotIndex(uint32_t* slots, uint64_t count, LiveEntry* out) : slots_(slots), mask_(count - 1), out_(out) {
    std::memset(slots_, 0, count * sizeof(uint32_t));
  }
  // Indexes out[i]; of two entries of its key, the older gets key 0.
  void add(uint64_t i) {
    uint32_t* s = find(out_[i].key);
    if (*s != 0 && !drop_older(*s - 1, i)) return;
    *s = uint32_t(i + 1);
  }
  // out[i] against the indexed entries (its key is not indexed itself).
  void check(uint64_t i) {
    uint32_t* s = find(out_[i].key);
    if (*s != 0) drop_older(*s - 1, i);
  }

 private:
  uint32_t* find(uint64_t key) {
    uint64_t i = LiveTable::hash(key) & mask_;
    while (slots_[i] != 0 && out_[slots_[i] - 1].key != key) i = (i + 1) & mask_;
    return &slots_[i];
  }
  // True when out[i] is the newer one (out[held] is dropped).
  bool drop_older(uint64_t held, uint64_t i) {
    if (newer_or_same(out_[held], out_[i])) {
      out_[i].key = 0;
      return false;
    }
    out_[held].key = 0;
    return true;
  }

  uint32_t* slots_;
  uint64_t mask_;
  LiveEntry* out_;
};

namespace {

// The entries of out[0, n) whose key is not 0, in their order; the count.
uint64_t drop_zero_keys(LiveEntry* out, uint64_t n) {
  uint64_t w = 0;
  for (uint64_t r = 0; r < n; ++r) {
    if (out[r].key == 0) continue;
    if (w != r) out[w] = out[r];
    ++w;
  }
  return w;
}

// Without an index (the host would not map one): sorted by key in place
// (std::sort allocates nothing), the newest of each run of one key kept.
uint64_t keep_newer_sorted(LiveEntry* out, uint64_t n) {
  std::sort(out, out + n, [](const LiveEntry& a, const LiveEntry& b) {
    return a.key != b.key ? a.key < b.key : newer_or_same(a, b) && !newer_or_same(b, a);
  });
  for (uint64_t i = 1; i < n; ++i)
    if (out[i].key == out[i - 1].key) out[i].key = 0;  // the run's first is the newest
  return drop_zero_keys(out, n);
}

}  // namespace

uint64_t LiveTable::keep_newer(LiveEntry* out, uint64_t first, uint64_t n) {
  if (first == n) return n;  // one home held everything
  uint64_t want = 64;
  while (want < 2 * (n - first)) want *= 2;
  if (scratch_slots_ < want) {
    const size_t bytes = want * sizeof(uint32_t);
    void* p = scratch_ ? mremap(scratch_, scratch_slots_ * sizeof(uint32_t), bytes, MREMAP_MAYMOVE)
                       : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return keep_newer_sorted(out, n);
    scratch_ = static_cast<uint32_t*>(p);
    scratch_slots_ = want;
  }
  SnapshotIndex index(scratch_, want, out);
  for (uint64_t i = first; i < n; ++i) index.add(i);
  for (uint64_t i = 0; i < first; ++i) index.check(i);
  return drop_zero_keys(out, n);
}

uint64_t LiveTable::count() const {
  uint64_t n = 0;
  for (const Home& s : homes_) n += live_of(s);
  return n;
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
  int fullest = 0;
  for (int k = 1; k < kHomes; ++k)
    if (live_of(homes_[k]) > live_of(homes_[fullest])) fullest = k;
  uint64_t n = 0, first = 0;
  for (int j = 0; j < kHomes; ++j) {
    Home& s = homes_[(fullest + j) % kHomes];  // the fullest first
    if (live_of(s) != 0) {
      SpinGuard g(s.lock);
      if (n + live_of(s) > cap) return UINT64_MAX;
      for_each_entry(s, [&](const LiveEntry& e) { out[n++] = e; });
    }
    if (j == 0) first = n;
  }
  return keep_newer(out, first, n);
}

// Order: the snapshot lock, then the homes (a thread holds one home lock
// at a time; a snapshot holds one besides its own).
void LiveTable::lock_all() {
  snapshot_lock_.lock();
  for (auto& s : homes_) s.lock.lock();
}

void LiveTable::unlock_all() {
  for (auto& s : homes_) s.lock.unlock();
  snapshot_lock_.unlock();
}

}  // namespace gpumemrec
