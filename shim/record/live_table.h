// The table of every allocation still held, keyed by device address (or by
// VMM handle, in a second instance). It answers "who holds the memory" even
// for allocations older than the ring.
//
// Two levels, so that the hot path writes no cache line another thread
// writes (docs/performance.md, "Threads: the live table's nurseries"):
//
// Nurseries: each recording thread keeps its last kNurserySlots allocations
// in its own nursery (picked once per thread, round robin: the first
// kNurseries threads of a process never share one). A nursery is one lock
// and a small array on lines only its thread writes, so an allocation freed
// by the same thread before kNurserySlots more of its allocations (the
// temporaries of a training step, most of a stream-ordered allocator's
// traffic) never touches a shared line. The oldest entry moves to the shards
// when a new one needs its slot.
//
// Shards: 64 shards keyed by a hash of the address, each guarded by its own
// spinlock. A shard is a power-of-two table with linear probing and
// backward-shift deletion (no tombstones: the probe length depends on the
// load only, not on how many allocations came and went). Keys sit in their
// own array (eight per cache line) and entries in a parallel one, so a probe
// touches one line of keys and the one entry it finds. A shard doubles when
// 5/8 full; the old table is moved over incrementally (a few slots per
// insert/remove of that shard), so no caller ever waits for a whole shard to
// be rehashed. Arrays come from mmap (zero pages on demand, no memset, no
// malloc lock).
//
// Finding a key (a free): this thread's nursery, then the shards, then the
// other threads' nurseries (those that hold anything), then the shards once
// more. A move holds its nursery's lock from the shard insert to the slot's
// release, so an entry is always in one of the places looked at, in that
// order, at the moment it is looked at: an entry moved after the first
// shard lookup is found by the second. A free on another thread than its
// allocation costs the walk of the other nurseries only while the entry is
// young.
//
// Lock order: a nursery, then a shard (a move); never two nurseries, never
// two shards, except lock_all (fork), which takes them all in that order.
// Lifetime hazard: a key the driver hands out again while we
// still list it (a free we did not see) can be in two places for a while;
// the newer allocation (by time) wins where the two meet (a move into a
// shard, a snapshot), as with one table.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "common/event.h"
#include "shim/base/spinlock.h"

namespace gpumemrec {

struct LiveEntry {
  uint64_t key = 0;      // address or handle; 0 = empty slot
  uint64_t size = 0;
  uint64_t time_ns = 0;
  uint64_t seq = 0;      // sequence number of the allocating event
  uint32_t stack_id = 0;
  uint32_t tid = 0;
  int16_t device = -1;
  uint8_t api = 0;
  uint8_t memory_type = 0;
};

// The live entry an allocation event stands for (the recorder when it
// records the allocation, the dumper when it reconciles with the ring).
inline LiveEntry live_entry_from_event(const Event& e) {
  LiveEntry a;
  a.key = e.address;
  a.size = e.size;
  a.time_ns = e.time_ns;
  a.seq = e.seq;
  a.stack_id = e.stack_id;
  a.tid = e.tid;
  a.device = int16_t(event_device(e));
  a.api = e.api;
  a.memory_type = uint8_t(event_memory_type(e));
  return a;
}

class LiveTable {
 public:
  static constexpr int kShards = 64;
  static constexpr int kNurseries = 64;
  static constexpr int kNurserySlots = 16;

  LiveTable() = default;
  ~LiveTable();
  LiveTable(const LiveTable&) = delete;
  LiveTable& operator=(const LiveTable&) = delete;

  // Inserts into this thread's nursery, or replaces (a driver never hands
  // out a live address twice; if it does, the newer allocation wins).
  // Returns false only if memory ran out.
  bool insert(const LiveEntry& e);
  // Removes `key`, copying the entry to *out. False if unknown.
  bool remove(uint64_t key, LiveEntry* out) { return lookup(key, out, true); }
  bool find(uint64_t key, LiveEntry* out) { return lookup(key, out, false); }

  uint64_t count() const;
  // Appends every entry; each nursery and shard is copied under its lock,
  // each key once (live_table_snapshot.cpp).
  void snapshot(std::vector<LiveEntry>* out);
  // The same into out[0, cap) without allocating (the out-of-memory freeze,
  // dump/freeze.h): the number copied, or UINT64_MAX when the entries do not
  // fit (the table grew since the caller sized `out`).
  uint64_t snapshot_into(LiveEntry* out, uint64_t cap);

  // fork: prepare locks every nursery and shard so no update is half-done,
  // parent/child unlock (see atfork in recorder.cpp).
  void lock_all();
  void unlock_all();

 private:
  // Marks a slot of the table being moved out whose entry was moved or
  // removed (only the old table of a shard that is growing has them).
  static constexpr uint64_t kMoved = ~uint64_t(0);
  // One cache line per shard: threads working on different shards never
  // share a line. keys[capacity] is followed by LiveEntry[capacity] in the
  // same mapping (entries(keys, capacity)).
  struct alignas(64) Shard {
    SpinLock lock;
    uint64_t* keys = nullptr;
    uint64_t capacity = 0;      // power of two, 0 before the first insert
    uint64_t live = 0;          // entries in both tables
    uint64_t* old_keys = nullptr;  // table being moved out, or null
    uint64_t old_capacity = 0;
    uint64_t cursor = 0;        // old slots below this one are moved
  };
  static_assert(sizeof(Shard) == 64, "a shard is one cache line");
  // A thread's young allocations. 128-byte aligned: the adjacent-line
  // prefetcher never pairs two threads' nurseries.
  struct alignas(128) Nursery {
    SpinLock lock;
    std::atomic<uint32_t> count{0};  // entries held; read without the lock by other threads' lookups
    uint32_t next = 0;               // the slot the next insert takes (the oldest entry's, when full)
    // 0 = empty slot. Written under `lock`; read without it by a lookup's
    // first scan (nursery_lookup), so atomic (relaxed).
    std::atomic<uint64_t> keys[kNurserySlots] = {};
    LiveEntry entries[kNurserySlots];
  };
  static uint64_t hash(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    key ^= key >> 33;
    return key;
  }
  static LiveEntry* entries(uint64_t* keys, uint64_t capacity) {
    return reinterpret_cast<LiveEntry*>(keys + capacity);
  }
  Shard& shard_for(uint64_t h) { return shards_[h >> 58]; }
  static uint64_t* map_table(uint64_t capacity);
  static void unmap_table(uint64_t* keys, uint64_t capacity);
  static uint64_t slot_of(const uint64_t* keys, uint64_t capacity, uint64_t key, uint64_t h);
  static void place(uint64_t* keys, uint64_t capacity, const LiveEntry& e, uint64_t h);
  static void erase_shift(uint64_t* keys, uint64_t capacity, uint64_t i);
  struct Retired {  // a moved-out table, unmapped when this goes away
    uint64_t* keys = nullptr;
    uint64_t capacity = 0;
    ~Retired() { unmap_table(keys, capacity); }
  };
  static void move_some(Shard& s, uint64_t slots, Retired* done);
  static bool start_growth(Shard& s, Retired* done);
  bool lookup(uint64_t key, LiveEntry* out, bool take);
  // The shards alone.
  bool shared_insert(const LiveEntry& e);
  bool shared_lookup(uint64_t key, LiveEntry* out, bool take);
  // The nurseries (live_table_nursery.cpp).
  Nursery& own_nursery();
  static int nursery_slot(const Nursery& n, uint64_t key);  // -1: not there (exact under n.lock)
  static bool nursery_lookup(Nursery& n, uint64_t key, LiveEntry* out, bool take);
  bool other_nurseries_lookup(const Nursery& own, uint64_t key, LiveEntry* out, bool take);
  template <typename Visit>
  static void for_each_entry(Shard& s, Visit&& visit);  // the caller holds s.lock

  Shard shards_[kShards];
  Nursery nurseries_[kNurseries];
  // One snapshot at a time: it uses dedupe_ (live_table_snapshot.cpp).
  SpinLock snapshot_lock_;
  static constexpr int kDedupeSlots = 2 * kNurseries * kNurserySlots;
  uint16_t dedupe_[kDedupeSlots] = {};  // index + 1 of a young entry in the snapshot; 0 = empty

  friend class SnapshotDedupe;
};

// True when `a` is the same allocation as `b` or a later one (time order,
// as a bundle orders events; seq breaks a tie within one thread).
inline bool newer_or_same(const LiveEntry& a, const LiveEntry& b) {
  return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.seq >= b.seq;
}

}  // namespace gpumemrec
