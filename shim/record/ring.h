// The bounded ring of the most recent events: fixed memory (capacity * 64
// bytes, mapped once at start-up), no lock.
//
// Writers claim a sequence number with one fetch_add and fill the slot
// seq % capacity under a per-slot seqlock: the slot's seq word is kBusy
// while it is written (taken with a compare-and-swap, so two writers that
// wrapped onto one slot never interleave) and the event's seq once complete. The dumper copies a slot and
// keeps it only if the seq word read before and after the copy is the one it
// expects; a slot that was overwritten or is being written is a hole
// (documented: seq numbers have holes only where events were overwritten or
// in flight at the moment of the dump).
// All accesses to slot words are atomic (relaxed, ordered by fences) so the
// ring is data-race free under ThreadSanitizer.
//
// fork: a thread of the parent may have been between taking a slot and
// completing it; in the child that thread does not exist and the slot would
// stay busy for ever (the next writer on it would spin for ever). The busy
// word therefore carries the process's fork epoch (after_fork_in_child()
// advances it): a writer that finds a slot busy under another epoch knows
// its owner is gone and takes the slot over. No scan, no cost when no fork
// happened.
#pragma once
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "common/event.h"

namespace gpumemrec {

class Ring {
 public:
  // `memory` must hold capacity * sizeof(Event) zeroed bytes.
  void init(void* memory, uint64_t capacity) {
    slots_ = static_cast<Event*>(memory);
    capacity_ = capacity;
  }
  uint64_t capacity() const { return capacity_; }
  bool ready() const { return slots_ != nullptr; }

  uint64_t claim() { return next_.fetch_add(1, std::memory_order_relaxed); }
  // One past the newest claimed sequence number.
  uint64_t end() const { return next_.load(std::memory_order_acquire); }

  void publish(const Event& e) {
    uint64_t* dst = take_slot(e.seq);
    if (!dst) return;
    uint64_t src[8];
    std::memcpy(src, &e, sizeof src);
    std::atomic_thread_fence(std::memory_order_release);
    for (int i = 1; i < 8; ++i) __atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
    __atomic_store_n(&dst[0], src[0], __ATOMIC_RELEASE);
  }

  // Takes the slot of `seq` for writing (marks it busy); nullptr when a newer
  // event owns it. Only one writer at a time may fill a slot. A writer that
  // was preempted between claim() and here can find the slot already reused
  // by an event `capacity` newer; it then drops its own (older) event rather
  // than tear or overwrite the newer one. Public for the fork test.
  uint64_t* take_slot(uint64_t seq) {
    uint64_t* dst = words(seq);
    const uint64_t busy = kBusyBit | epoch_.load(std::memory_order_relaxed);
    uint64_t cur = __atomic_load_n(&dst[0], __ATOMIC_RELAXED);
    for (int spins = 0;; ++spins) {
      if ((cur & kBusyBit) && cur == busy) {  // another thread of this process is writing it
        if (spins > 64) sched_yield();
        cur = __atomic_load_n(&dst[0], __ATOMIC_RELAXED);
        continue;
      }
      // Busy under an older epoch: its writer was a thread of the parent at
      // a fork and will never finish; take the slot over.
      if (!(cur & kBusyBit) && cur > seq) return nullptr;  // a newer event owns the slot
      if (__atomic_compare_exchange_n(&dst[0], &cur, busy, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return dst;
    }
  }

  // Copies event `seq` into *out; false if the slot no longer (or not yet)
  // holds it.
  bool read(uint64_t seq, Event* out) const {
    const uint64_t* src = words(seq);
    uint64_t w[8];
    w[0] = __atomic_load_n(&src[0], __ATOMIC_ACQUIRE);
    if (w[0] != seq) return false;
    for (int i = 1; i < 8; ++i) w[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (__atomic_load_n(&src[0], __ATOMIC_RELAXED) != seq) return false;
    std::memcpy(out, w, sizeof w);
    return true;
  }

  // In the child of a fork (one thread, in the atfork child handler): slots
  // that other threads were writing at the fork become holes, and the next
  // writer on one of them takes it over (see the epoch above).
  void after_fork_in_child() { epoch_.fetch_add(1, std::memory_order_relaxed); }

 private:
  // Sequence numbers start at 1 and stay far below 2^63.
  static constexpr uint64_t kBusyBit = uint64_t(1) << 63;
  uint64_t* words(uint64_t seq) const { return reinterpret_cast<uint64_t*>(&slots_[seq % capacity_]); }

  Event* slots_ = nullptr;
  uint64_t capacity_ = 0;
  alignas(64) std::atomic<uint64_t> next_{1};
  std::atomic<uint64_t> epoch_{0};  // the fork epoch (see above); written only in a child's fork handler
};

}  // namespace gpumemrec
