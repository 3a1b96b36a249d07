// The live table's nurseries and the two public entry points that go
// through them: insert (into this thread's nursery) and lookup (this
// thread's nursery, the shards, the other nurseries, the shards again).
// Why and the rules: live_table.h.
#include "shim/record/live_table.h"

#include "shim/base/tls.h"

namespace gpumemrec {

namespace {

std::atomic<unsigned> g_next_nursery{0};  // written once per thread
// This thread's nursery index + 1 (0: not picked yet), the same in every
// table. A forked child's thread keeps it.
GM_TLS unsigned t_nursery = 0;

}  // namespace

LiveTable::Nursery& LiveTable::own_nursery() {
  if (__builtin_expect(t_nursery == 0, 0))
    t_nursery = g_next_nursery.fetch_add(1, std::memory_order_relaxed) % kNurseries + 1;
  return nurseries_[t_nursery - 1];
}

int LiveTable::nursery_slot(const Nursery& n, uint64_t key) {
  for (int i = 0; i < kNurserySlots; ++i)
    if (n.keys[i].load(std::memory_order_relaxed) == key) return i;
  return -1;
}

// The lock is taken only when a first scan without it sees the key. That
// scan cannot miss an entry put there before this lookup began (the
// program freed what it had been given): it reads that store or a later
// one, and a later one either removed the key (a double free) or replaced
// it with another as the entry moved to the shards, where the caller looks
// next. So a free of an older allocation costs no lock here.
bool LiveTable::nursery_lookup(Nursery& n, uint64_t key, LiveEntry* out, bool take) {
  if (nursery_slot(n, key) < 0) return false;
  SpinGuard g(n.lock);
  const int i = nursery_slot(n, key);
  if (i < 0) return false;
  if (out) *out = n.entries[i];
  if (take) {
    n.keys[i].store(0, std::memory_order_relaxed);
    n.count.store(n.count.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }
  return true;
}

// The nurseries of other threads that hold anything. `count` is read
// without their locks: an entry put there before this lookup began (the
// program freed what it had been given) is counted in what this thread
// sees; one that left since is found in the shards by the caller's second
// look.
bool LiveTable::other_nurseries_lookup(const Nursery& own, uint64_t key, LiveEntry* out, bool take) {
  for (Nursery& n : nurseries_) {
    if (&n == &own || n.count.load(std::memory_order_relaxed) == 0) continue;
    if (nursery_lookup(n, key, out, take)) return true;
  }
  return false;
}

// The slot `next` cycles through the nursery, so an entry stays at most
// kNurserySlots of this thread's inserts; when the slot is taken its entry
// (the oldest) moves to the shards, under this nursery's lock (live_table.h:
// a concurrent lookup finds it on one side or the other).
bool LiveTable::insert(const LiveEntry& e) {
  if (e.key == 0 || e.key == kMoved) return false;
  Nursery& n = own_nursery();
  SpinGuard g(n.lock);
  int i = nursery_slot(n, e.key);
  if (i >= 0) {  // the newer allocation wins
    n.entries[i] = e;
    return true;
  }
  i = int(n.next);
  if (n.keys[i].load(std::memory_order_relaxed) != 0) {
    if (!shared_insert(n.entries[i])) return false;  // no memory: the older entry stays, this one is not kept
  } else {
    n.count.store(n.count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  n.next = (n.next + 1) % kNurserySlots;
  n.keys[i].store(e.key, std::memory_order_relaxed);
  n.entries[i] = e;
  return true;
}

bool LiveTable::lookup(uint64_t key, LiveEntry* out, bool take) {
  if (key == 0 || key == kMoved) return false;
  Nursery& own = own_nursery();
  if (nursery_lookup(own, key, out, take)) return true;
  if (shared_lookup(key, out, take)) return true;
  if (other_nurseries_lookup(own, key, out, take)) return true;
  return shared_lookup(key, out, take);  // moved from a nursery to the shards while we looked
}

}  // namespace gpumemrec
