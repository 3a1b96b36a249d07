// How far behind a thread's block of seqs may fall and still be written, and
// from what moment a dump's window holds every event (ring.h, "Blocks").
//
// Why it is needed. With one claim counter, seq was time order and the
// window [end - capacity, end) held every event newer than its oldest one.
// With blocks, a thread that took its block early writes its events late,
// so an event of seq below the window (overwritten, or never in it) can be
// NEWER than events the window holds: a bundle would hold an allocation
// and miss the later free at the same address in another thread. Two
// rules close the window in time:
//
//  1. Freshness (the hot path). A thread drops the rest of its block when
//     the block's next seq is below the floor: `lag` seqs below the newest
//     mark. So an event checked at moment k has seq >= floor(k).
//  2. Marks (the dump). Every `step` seqs of claims, the claiming thread
//     that crossed the step raises the floor (a compare-and-swap loop: the
//     floor never goes down) and only then reads the clock and stores the
//     mark (n, t): from moment t on, every freshness check sees a floor of at
//     least n - lag. Each event's time is taken before its seq is checked
//     (an allocation's after the real call returned, then the claim; a
//     free's before the real free, then the claim after it: recorder.cpp),
//     so an event with time >= t has seq >= n - lag. complete_from(lo)
//     returns the t of the first mark with n - lag >= lo: every event at or
//     after that moment has a seq in the window [lo, end); the dump drops
//     the window's events older than it (their history may be incomplete).
//     What a bundle loses to this: about lag + step seqs of its oldest
//     events (1/16 + 1/64 of the ring).
//
// Costs on the hot path: the floor is a read of a line written once per
// `step` claims (every thread keeps it in its cache); marks are written
// once per `step` seqs by one thread. A thread quiet for `lag` seqs of
// other threads' events loses the rest of its block (a hole of at most one
// block). Lifetime hazard: a thread preempted between its freshness check
// and its publish can still write an event that is already out of the
// window; it is then an event in flight at the dump, as with one counter.
// fork: the marks and the floor are copied with the process; the child's
// claims continue from them.
#pragma once
#include <atomic>
#include <cstdint>

#include "shim/base/clock.h"

namespace gpumemrec {

class ClaimMarks {
 public:
  static constexpr unsigned kMarks = 128;  // with step = capacity/64: two rings of claims

  void init(uint64_t capacity, uint64_t block) {
    step_ = capacity / 64 ? capacity / 64 : 1;
    lag_ = capacity / 16 > block ? capacity / 16 : block;  // a fresh block is never below the floor
  }
  uint64_t lag() const { return lag_; }
  uint64_t step() const { return step_; }

  // True while `seq` may still be handed out (rule 1).
  bool fresh(uint64_t seq) const { return seq >= floor_.load(std::memory_order_acquire); }
  // Seqs below it are never handed out again (rule 1): the peak keeper reads
  // up to it (shim/dump/capture/peak_keeper.h).
  uint64_t floor() const { return floor_.load(std::memory_order_acquire); }

  // After a block ending at `end` (one past its last seq) was claimed.
  void on_claim(uint64_t end) {
    const uint64_t reached = end / step_ * step_;
    uint64_t cur = reached_.load(std::memory_order_relaxed);
    if (reached <= cur) return;
    if (!reached_.compare_exchange_strong(cur, reached, std::memory_order_relaxed)) return;  // another marks it
    const uint64_t want = reached > lag_ ? reached - lag_ : 0;
    uint64_t f = floor_.load(std::memory_order_relaxed);
    while (f < want && !floor_.compare_exchange_weak(f, want, std::memory_order_acq_rel)) {
    }
    Mark& m = marks_[(reached / step_) % kMarks];  // the floor first, then the clock: see rule 2
    const uint64_t t = monotonic_ns();
    m.n.store(0, std::memory_order_relaxed);
    m.t.store(t, std::memory_order_release);
    m.n.store(reached, std::memory_order_release);
  }

  // The moment (CLOCK_MONOTONIC) from which every event has a seq >= lo
  // (rule 2); 0 when lo <= 1 (nothing was ever out of the window) or when
  // no mark says so (rare: a marking thread preempted; the dump keeps every
  // event of the window, as with one counter).
  uint64_t complete_from(uint64_t lo) const {
    if (lo <= 1) return 0;
    uint64_t best_n = UINT64_MAX, best_t = 0;
    for (const Mark& m : marks_) {
      const uint64_t n = m.n.load(std::memory_order_acquire);
      const uint64_t t = m.t.load(std::memory_order_acquire);
      if (n == 0 || m.n.load(std::memory_order_acquire) != n) continue;
      if (n < lo + lag_ || n >= best_n) continue;
      best_n = n;
      best_t = t;
    }
    return best_t;
  }

 private:
  struct Mark {
    std::atomic<uint64_t> n{0};  // a step boundary of claims; 0 while written
    std::atomic<uint64_t> t{0};  // CLOCK_MONOTONIC, read after the floor was raised for n
  };
  uint64_t step_ = 1, lag_ = 1;
  // Written once per step: off the lines of everything written per claim.
  alignas(128) std::atomic<uint64_t> floor_{0};
  std::atomic<uint64_t> reached_{0};
  alignas(128) Mark marks_[kMarks];
};

}  // namespace gpumemrec
