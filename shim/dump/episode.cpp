#include "shim/dump/episode.h"

namespace gpumemrec {

bool EpisodeClock::on_failure(uint64_t now_ns, uint64_t window_ns) {
  uint64_t prev = latest_.load(std::memory_order_acquire);
  for (;;) {
    // now_ns <= prev (clock read before another thread's store): same episode.
    const bool opens = prev == 0 || window_ns == 0 || (now_ns > prev && now_ns - prev >= window_ns);
    const uint64_t next = now_ns > prev ? now_ns : prev;
    if (latest_.compare_exchange_weak(prev, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
      if (opens) count_.store(1, std::memory_order_relaxed);
      else count_.fetch_add(1, std::memory_order_relaxed);
      return opens;
    }
  }
}

void EpisodeClock::reset() {
  latest_.store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
}

}  // namespace gpumemrec
