// Out-of-memory episodes: a framework that fails, frees its cache and
// retries fails many times in a row; one bundle per episode is enough (the
// first failure's state is the one that matters). An episode starts only
// when a bundle is actually going to be written for it (the caller holds the
// dump slot): a failure that meets another dump in progress (a signal or exit
// dump, or another thread's) starts nothing, so the next failure after that
// dump still gets its bundle. Failures that get no bundle are counted and
// reported by the next bundle (metadata `failed_calls_before_dump`).
#pragma once
#include <atomic>
#include <cstdint>

namespace gpumemrec {

class Episodes {
 public:
  // A failure at `now_ns` (monotonic): true when it belongs to the current
  // episode (no bundle: counted, and the episode extended to now_ns).
  // Safe against timestamps taken by other threads slightly out of order.
  bool in_episode(uint64_t now_ns, uint64_t episode_ns);
  // The caller will write the bundle for a failure at now_ns: a new episode.
  // Returns the failures since the previous bundle that got none.
  uint64_t start(uint64_t now_ns);
  // A failure that got no bundle and started no episode.
  void missed() { unreported_.fetch_add(1, std::memory_order_relaxed); }
  // For a bundle that starts no episode (signal, exit): same count as start().
  uint64_t take_unreported() { return unreported_.exchange(0, std::memory_order_acq_rel); }
  void reset();  // forked child

 private:
  std::atomic<uint64_t> last_ns_{0};  // last failure of the current episode; 0 = none
  std::atomic<uint64_t> unreported_{0};
};

}  // namespace gpumemrec
