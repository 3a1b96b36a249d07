// The table of every allocation still held, keyed by device address (or by
// VMM handle, in a second instance). It answers "who holds the memory" even
// for allocations older than the ring.
//
// Homes, so that a thread's own allocations and frees write no cache line
// another thread writes, however long the allocations live
// (docs/performance.md, "Threads"):
//
// Each recording thread has a home table (one of kHomes, picked once per
// thread, round robin: the first kHomes threads of a process never share
// one; later ones share, still correct, as every home has its own lock). An
// allocation is inserted into its thread's home and stays there until it is
// freed: entries never move between homes. A home is a power-of-two table
// with linear probing and backward-shift deletion (no tombstones: the probe
// length depends on the load only, not on how many allocations came and
// went). Keys sit in their own array (eight per cache line) and entries in a
// parallel one, so a probe touches one line of keys and the one entry it
// finds. A home doubles when 5/8 full; the old table is moved over
// incrementally (a few slots per insert/remove of that home), then given
// back to the kernel a step at a time, so no caller ever waits for a whole
// table to be rehashed or unmapped, and a thread looking into
// another's home while it grows holds that home's lock for one probe of
// each of its two tables. Arrays come from mmap (zero pages on demand, no
// memset, no malloc lock).
//
// Finding a key (a free): this thread's home, then every other home that
// holds anything (`used_`, then `live`, read without its lock), each under
// its own lock.
// An entry inserted before the free began (the program frees what it was
// given) is counted in what the freeing thread reads, and it cannot leave
// its home but by a removal, so one pass finds it. A free on another thread
// than the allocation's costs a lock and a probe per other home that holds
// anything (the allocating thread's lines move to the freeing core); a free
// on the allocating thread costs its own home's lock and one probe.
//
// The hold (the out-of-memory freeze's hand-over, live_table_hold.cpp):
// hold() makes the table's state at that moment the snapshot without
// copying it; the writer thread copies it later (collect_held). Meanwhile
// each update of a held home logs the entry it changes (its undo log), and
// the home's layout stays put (a removal leaves a tombstone, no entry moves,
// the home does not grow), so the writer can copy it a chunk of slots per
// lock and undo what the log says changed.
//
// Lock order: a thread holds one home lock at a time, except lock_all
// (fork), which takes the snapshot lock then every home in index order.
// Lifetime hazard: a key the driver hands out again while we still list it
// (a free we did not see) replaces the entry when both allocations were
// made by threads of one home; across homes both stay listed, a snapshot
// keeps the newer (by time) only, and a free removes the one found first
// (its own home's), so the older can stay listed after the newer is freed.
#pragma once
#include <atomic>
#include <cstddef>
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

// A held home's log record: the entry `before.key` had before an update
// (present = 0: it had none).
struct Undo {
  LiveEntry before;
  uint64_t present = 0;
};

class LiveTable {
 public:
  static constexpr int kHomes = 64;
  // Records of a held home's log: a home updated more often before the
  // writer copies it is copied by the updating thread (stash_home).
  static constexpr uint32_t kLogSlots = 8192;

  LiveTable() = default;
  ~LiveTable();
  LiveTable(const LiveTable&) = delete;
  LiveTable& operator=(const LiveTable&) = delete;

  // Inserts into this thread's home, or replaces (a driver never hands
  // out a live address twice; if it does, the newer allocation wins).
  // Returns false only if memory ran out.
  bool insert(const LiveEntry& e);
  // Removes `key`, copying the entry to *out. False if unknown.
  bool remove(uint64_t key, LiveEntry* out) { return lookup(key, out, true); }
  bool find(uint64_t key, LiveEntry* out) { return lookup(key, out, false); }

  uint64_t count() const;
  // Appends every entry; each home is copied under its lock, each key once
  // (live_table_snapshot.cpp).
  void snapshot(std::vector<LiveEntry>* out);
  // The same into out[0, cap) without calling malloc (the out-of-memory
  // freeze, dump/freeze.h): the number copied, or UINT64_MAX when the
  // entries do not fit (the table grew since the caller sized `out`).
  uint64_t snapshot_into(LiveEntry* out, uint64_t cap);

  // fork: prepare locks every home so no update is half-done, parent/child
  // unlock (see atfork in recorder.cpp).
  void lock_all();
  void unlock_all();

  // The hold (see above; live_table_hold.cpp). One at a time: false when a
  // hold is pending already or its logs cannot be mapped (the caller copies
  // with snapshot_into instead). Takes each home's lock once, in turn.
  bool hold();
  // Room collect_held needs: the entries held plus one home's log.
  uint64_t held_bound() const;
  // The writer: the table as it was at hold() into out[0, cap), each key
  // once (the newer entry, as snapshot_into), and the hold is over. The
  // number copied (at most held_bound()).
  uint64_t collect_held(LiveEntry* out, uint64_t cap);
  // The hold is over without a copy (its bundle was given up).
  void drop_hold();
  // A forked child: the parent's writer is not here, nor its hold.
  void forget_hold();
  // The logs' touched pages back to the kernel, unless a hold is pending
  // (the writer, once idle: dump/capture/freeze.h, freeze_trim).
  void trim_hold_logs();
  // Updates that logged to a held home since start-up, and homes copied by
  // the updating thread because their log was full or they had to grow (for
  // the tests and the benchmark).
  uint64_t held_updates() const { return held_updates_.load(std::memory_order_relaxed); }
  uint64_t held_stashes() const { return held_stashes_.load(std::memory_order_relaxed); }
  // Homes whose stash the host refused: their copy showed later changes.
  uint64_t held_lost() const { return held_lost_.load(std::memory_order_relaxed); }

 private:
  // Marks a slot of the table being moved out whose entry was moved or
  // removed, and (tombstones) a slot of the current table whose entry was
  // removed while its home was held.
  static constexpr uint64_t kMoved = ~uint64_t(0);
  // A thread's table. 128-byte aligned: the adjacent-line prefetcher never
  // pairs two threads' homes. keys[capacity] is followed by
  // LiveEntry[capacity] in the same mapping (entries(keys, capacity)).
  struct alignas(128) Home {
    // The first line: what every update reads (the lock, the hold flag, the
    // tables); the second: the hold's and the retired table's bookkeeping.
    SpinLock lock;
    // The hold (live_table_hold.cpp), all under `lock`: `held` from hold()
    // until the writer copied this home; its log, `logged` records long.
    bool held = false;
    bool hold_lost = false;  // no memory for a stash: the copy is of a later state
    uint32_t logged = 0;
    // Entries in both tables. Written under `lock`; read without it by
    // other threads' lookups (skip an empty home) and count().
    std::atomic<uint64_t> live{0};
    uint64_t* keys = nullptr;
    uint64_t capacity = 0;         // power of two, 0 before the first insert
    uint64_t* old_keys = nullptr;  // table being moved out, or null
    uint64_t old_capacity = 0;
    uint64_t cursor = 0;           // old slots below this one are moved
    // Removed entries of the current table left as kMoved while the home
    // was held (gone at its next growth; counted in its load meanwhile).
    uint64_t tombs = 0;
    // A moved-out table not unmapped yet: unmapping 56 MiB (1M slots) took
    // 5 ms, so it goes back kReleaseStep bytes per update of the home.
    char* retired = nullptr;
    size_t retired_bytes = 0;
    // The hold's log, the home's entry count at the hold, and a copy made
    // by an update that could not log (stash_home), with its count.
    Undo* log = nullptr;
    uint64_t held_live = 0;
    LiveEntry* stash = nullptr;
    uint64_t stash_count = 0;
  };
  static_assert(sizeof(Home) == 128, "one home, one pair of lines");
  static_assert(offsetof(Home, tombs) < 64, "what an update reads, in the first line");
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
  static uint64_t* map_table(uint64_t capacity);
  static void unmap_table(uint64_t* keys, uint64_t capacity);
  static uint64_t slot_of(const uint64_t* keys, uint64_t capacity, uint64_t key, uint64_t h);
  static void place(uint64_t* keys, uint64_t capacity, const LiveEntry& e, uint64_t h);
  static void erase_shift(uint64_t* keys, uint64_t capacity, uint64_t i);
  // Memory to unmap once the home's lock is released: a step of a retired
  // table, and (rare) a whole one. ~Retired unmaps them.
  struct Retired {
    void* step = nullptr;
    size_t step_bytes = 0;
    void* rest = nullptr;
    size_t rest_bytes = 0;
    ~Retired();
  };
  static void move_some(Home& s, uint64_t slots, Retired* done);
  static void release_step(Home& s, Retired* done);
  static bool start_growth(Home& s, Retired* done);
  static void set_live(Home& s, uint64_t n) { s.live.store(n, std::memory_order_relaxed); }
  static uint64_t live_of(const Home& s) { return s.live.load(std::memory_order_relaxed); }
  // One home's table, under its lock (live_table.cpp).
  static bool home_insert(Home& s, const LiveEntry& e, uint64_t h, Retired* done);
  static bool home_lookup(Home& s, uint64_t key, uint64_t h, LiveEntry* out, bool take, Retired* done);
  // The homes (live_table_homes.cpp).
  Home& own_home();
  bool lookup(uint64_t key, LiveEntry* out, bool take);
  template <typename Visit>
  static void for_each_entry(Home& s, Visit&& visit) {  // the caller holds s.lock
    for (uint64_t* keys : {s.keys, s.old_keys}) {
      if (!keys) continue;
      const uint64_t cap = keys == s.keys ? s.capacity : s.old_capacity;
      const LiveEntry* vals = entries(keys, cap);
      for (uint64_t i = 0; i < cap; ++i)
        if (keys[i] != 0 && keys[i] != kMoved) visit(vals[i]);
    }
  }
  // The hold's side of an update of a held home (the caller holds its lock):
  // logs the entry `key` had (`before`, or none), or copies the home when
  // its log is full (stash_home). Cold: only while a hold is pending.
  static void log_update(Home& s, uint64_t key, const LiveEntry* before);
  // Copies the held home as it is now (its log still undoes the rest) and
  // ends its hold: the log was full, or the home must grow.
  static void stash_home(Home& s);
  // The writer's copy of one held home, its log undone; the new count.
  uint64_t collect_home(Home& s, LiveEntry* out, uint64_t n, uint64_t cap);
  static uint64_t copy_held_slots(Home& s, LiveEntry* out, uint64_t n, uint64_t cap);
  // Drops the older of two entries of one key from out[0, n) whose entries
  // from `first` on came from other homes than [0, first) (each home's
  // keys are unique); the new count (live_table_snapshot.cpp).
  uint64_t keep_newer(LiveEntry* out, uint64_t first, uint64_t n);

  Home homes_[kHomes];
  // A bit per home that ever held an entry: set once, by the home's first
  // insert (read first, so never written again), never cleared. A lookup
  // that misses its own home walks only these, not all kHomes lines.
  std::atomic<uint64_t> used_{0};
  static_assert(kHomes <= 64, "one bit per home");
  // One snapshot at a time: it uses scratch_ (live_table_snapshot.cpp), an
  // index mapped on first need and grown with mremap, never freed but with
  // the table.
  SpinLock snapshot_lock_;
  uint32_t* scratch_ = nullptr;
  uint64_t scratch_slots_ = 0;
  // The hold: one pending at a time; the homes' logs (kHomes x kLogSlots
  // records), mapped at the first hold and kept (pages given back after
  // each collect).
  std::atomic<bool> holding_{false};  // also taken by trim_hold_logs
  Undo* logs_ = nullptr;
  bool logs_dirty_ = false;  // written and read while holding_ is ours
  std::atomic<uint64_t> held_updates_{0}, held_stashes_{0}, held_lost_{0};

  friend class SnapshotIndex;
};

// True when `a` is the same allocation as `b` or a later one (time order,
// as a bundle orders events; seq breaks a tie within one thread).
inline bool newer_or_same(const LiveEntry& a, const LiveEntry& b) {
  return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.seq >= b.seq;
}

}  // namespace gpumemrec
