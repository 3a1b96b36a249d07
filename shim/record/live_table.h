// The table of every allocation still held, keyed by device address (or by
// VMM handle, in a second instance). It answers "who holds the memory" even
// for allocations older than the ring.
//
// Sharded open addressing: 64 shards, each a power-of-two array with linear
// probing and tombstones, guarded by its own spinlock. Growth (malloc) happens
// under the shard lock, rarely: the table doubles when 70% full.
#pragma once
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

  LiveTable() = default;
  ~LiveTable();
  LiveTable(const LiveTable&) = delete;
  LiveTable& operator=(const LiveTable&) = delete;

  // Inserts or replaces (a driver never hands out a live address twice; if it
  // does, the newer allocation wins). Returns false only if memory ran out.
  bool insert(const LiveEntry& e);
  // Removes `key`, copying the entry to *out. False if unknown.
  bool remove(uint64_t key, LiveEntry* out) { return lookup(key, out, true); }
  bool find(uint64_t key, LiveEntry* out) { return lookup(key, out, false); }

  uint64_t count() const;
  // Appends every entry; each shard is copied under its lock.
  void snapshot(std::vector<LiveEntry>* out);

  // fork: prepare locks every shard so no update is half-done, parent/child
  // unlock (see atfork in recorder.cpp).
  void lock_all();
  void unlock_all();

 private:
  static constexpr uint64_t kTombstone = ~uint64_t(0);
  // One cache line per shard: threads working on different shards never
  // share a line.
  struct alignas(64) Shard {
    SpinLock lock;
    LiveEntry* slots = nullptr;
    uint64_t capacity = 0;  // power of two
    uint64_t used = 0;      // live + tombstones
    uint64_t live = 0;
  };
  static_assert(sizeof(Shard) == 64, "a shard is one cache line");
  static uint64_t hash(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    key ^= key >> 33;
    return key;
  }
  Shard& shard_for(uint64_t h) { return shards_[h >> 58]; }
  bool grow(Shard& s);
  bool lookup(uint64_t key, LiveEntry* out, bool take);
  static LiveEntry* probe(Shard& s, uint64_t key, uint64_t h, bool for_insert);

  Shard shards_[kShards];
};

}  // namespace gpumemrec
