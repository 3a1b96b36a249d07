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
    uint64_t* dst = words(e.seq);
    uint64_t src[8];
    std::memcpy(src, &e, sizeof src);
    // Take the slot: only one writer at a time may fill it. A writer that
    // was preempted between claim() and here can find the slot already
    // reused by an event `capacity` newer; it then drops its own (older)
    // event rather than tear or overwrite the newer one.
    uint64_t cur = __atomic_load_n(&dst[0], __ATOMIC_RELAXED);
    for (int spins = 0;; ++spins) {
      if (cur == kBusy) {
        if (spins > 64) sched_yield();
        cur = __atomic_load_n(&dst[0], __ATOMIC_RELAXED);
        continue;
      }
      if (cur > e.seq) return;  // a newer event owns the slot
      if (__atomic_compare_exchange_n(&dst[0], &cur, kBusy, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) break;
    }
    std::atomic_thread_fence(std::memory_order_release);
    for (int i = 1; i < 8; ++i) __atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
    __atomic_store_n(&dst[0], src[0], __ATOMIC_RELEASE);
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

  // After fork the child has one thread: slots being written by other
  // threads at the fork stay holes; nothing else needs resetting.

 private:
  static constexpr uint64_t kBusy = ~uint64_t(0);
  uint64_t* words(uint64_t seq) const { return reinterpret_cast<uint64_t*>(&slots_[seq % capacity_]); }

  Event* slots_ = nullptr;
  uint64_t capacity_ = 0;
  alignas(64) std::atomic<uint64_t> next_{1};
};

}  // namespace gpumemrec
