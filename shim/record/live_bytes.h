// Live bytes per device, as the recorder counts them, without a cache line
// that every allocating thread writes.
//
// A single counter per device was one `lock xadd` per allocation and per
// free on a line every allocating thread shared: with two threads really
// running at once (docs/performance-log.md, the null-driver rows under
// `chrt -f 1`) it was ~17% of the hot path's samples. Instead each thread
// adds into one of kShards slabs (picked once per thread, round robin, so
// the first kShards threads of a process never share one), and a read sums
// the slabs. The hot path then writes only its own slab's line; reads are
// rare (the failing call's live_on_device, a verdict's check after a
// failure): kShards loads.
//
// A free may run on another thread than its allocation: that thread's slab
// goes negative, the sum stays right (each slab is a signed running total;
// only the sum is clamped at 0).
//
// GPUMEMREC_LIMIT needs check-and-reserve in one step (two threads must
// never both see room that only one of them fits in): a device with a limit
// counts in one exact shared counter instead (admit's compare-and-swap),
// so only a program that sets a limit pays for a shared line, and only on
// the devices it limits. The configuration is fixed at start-up, so a
// limited device's bytes are all in its exact counter and its slabs stay
// at 0; the read adds both, so it is right either way.
//
// Each event's memory_allocated in a bundle is not read from here: it is
// derived at the dump from the reconciled live set (shim/dump/capture/history.h).
//
// fork: the child's only thread keeps its slab index; the slabs are copied
// with the rest of memory, so the sums carry over.
#pragma once
#include <atomic>
#include <cstdint>

#include "common/config.h"
#include "shim/base/tls.h"

namespace gpumemrec {

class LiveBytes {
 public:
  static constexpr int kShards = 32;
  static constexpr int kSlots = kMaxDevices + 1;  // slot kMaxDevices collects unknown devices

  static int slot(int device) { return device >= 0 && device < kMaxDevices ? device : kMaxDevices; }

  // This thread's change to a device's bytes (a relaxed add on a line that
  // only this thread writes, while a process has at most kShards threads
  // recording).
  void add(int device, int64_t delta) {
    shards_[this_shard()].bytes[slot(device)].fetch_add(delta, std::memory_order_relaxed);
  }
  // The exact counter of a limited device (see above).
  std::atomic<int64_t>& exact(int device) { return exact_[slot(device)]; }
  void add_exact(int device, int64_t delta) { exact_[slot(device)].fetch_add(delta, std::memory_order_relaxed); }

  // Sum of the slabs and the exact counter, clamped at 0. Concurrent changes
  // may or may not be counted (as with one counter read at some moment).
  uint64_t read(int device) const {
    const int s = slot(device);
    int64_t v = exact_[s].load(std::memory_order_relaxed);
    for (const Shard& sh : shards_) v += sh.bytes[s].load(std::memory_order_relaxed);
    return v < 0 ? 0 : uint64_t(v);
  }

  // Of those bytes, the ones from stream-ordered pools (cudaMallocAsync and
  // kin), counted again in the same slab, on its own lines: only the dump
  // reads them. NVML counts a pool's freed bytes until the pool releases
  // them, so the card accounting leaves pool frees out when it takes
  // NVML's figure back to the failure (common/card_accounting.h).
  void add_pooled(int device, int64_t delta) {
    shards_[this_shard()].pooled[slot(device)].fetch_add(delta, std::memory_order_relaxed);
  }
  uint64_t read_pooled(int device) const {
    const int s = slot(device);
    int64_t v = 0;
    for (const Shard& sh : shards_) v += sh.pooled[s].load(std::memory_order_relaxed);
    return v < 0 ? 0 : uint64_t(v);
  }

 private:
  // 65 counters (520 bytes) padded to 640: a whole number of 128-byte pairs
  // of lines, so the adjacent-line prefetcher never pairs two threads' slabs.
  struct alignas(128) Shard {
    std::atomic<int64_t> bytes[kSlots];
    std::atomic<int64_t> pooled[kSlots];  // written only for stream-ordered allocations and their frees
  };
  static_assert(sizeof(Shard) % 128 == 0, "slabs are whole 128-byte pairs of cache lines");

  unsigned this_shard() {
    static GM_TLS unsigned t_shard = 0;  // index + 1; 0 = not picked yet
    if (__builtin_expect(t_shard == 0, 0))
      t_shard = next_shard_.fetch_add(1, std::memory_order_relaxed) % kShards + 1;
    return t_shard - 1;
  }

  Shard shards_[kShards] = {};
  alignas(128) std::atomic<int64_t> exact_[kSlots] = {};
  alignas(128) std::atomic<unsigned> next_shard_{0};  // written once per thread
};

}  // namespace gpumemrec
