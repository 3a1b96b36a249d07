// A tiny test-and-test-and-set lock for the live table shards: critical
// sections are a few dozen instructions, so spinning (then yielding) beats a
// futex round trip. Held only around table updates, never while unwinding,
// calling the driver or allocating from the hot path.
#pragma once
#include <sched.h>

#include <atomic>

namespace gpumemrec {

class SpinLock {
 public:
  void lock() {
    for (int spins = 0;; ++spins) {
      if (!flag_.load(std::memory_order_relaxed) && !flag_.exchange(true, std::memory_order_acquire)) return;
      if (spins > 64) sched_yield();
      else __builtin_ia32_pause();
    }
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

struct SpinGuard {
  explicit SpinGuard(SpinLock& l) : l_(l) { l_.lock(); }
  ~SpinGuard() { l_.unlock(); }
  SpinLock& l_;
};

}  // namespace gpumemrec
