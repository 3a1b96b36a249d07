#include "shim/dump/episodes.h"

namespace gpumemrec {

bool Episodes::in_episode(uint64_t now_ns, uint64_t episode_ns) {
  uint64_t last = last_ns_.load(std::memory_order_acquire);
  for (;;) {
    if (last == 0) return false;
    // now_ns may be a little older than `last` (taken by another thread
    // before it stored its own): that is the same episode, not a wrap.
    if (now_ns > last && now_ns - last >= episode_ns) return false;
    if (now_ns <= last || last_ns_.compare_exchange_weak(last, now_ns, std::memory_order_acq_rel)) break;
  }
  unreported_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

uint64_t Episodes::start(uint64_t now_ns) {
  last_ns_.store(now_ns == 0 ? 1 : now_ns, std::memory_order_release);
  return take_unreported();
}

void Episodes::reset() {
  last_ns_.store(0, std::memory_order_relaxed);
  unreported_.store(0, std::memory_order_relaxed);
}

}  // namespace gpumemrec
