// Out-of-memory episodes: failures less than GPUMEMREC_EPISODE_MS apart
// (a framework freeing its cache and retrying, or many threads failing
// together) form one episode, and one episode gives one bundle.
//
// The decision is a compare-and-swap on the latest failure time seen, so that
// exactly one failure opens each episode whatever the number of threads. Times
// come from different threads: a thread may present a time earlier than one
// another thread already stored (it read the clock first, stored second).
// Such a failure is inside the episode; the difference is never taken the
// other way round (an unsigned `now - last` wrapped and opened a new episode
// for it, found with 8 threads: 6-8 bundles for one episode).
#pragma once
#include <atomic>
#include <cstdint>

namespace gpumemrec {

class EpisodeClock {
 public:
  // Records a failure at `now_ns` (monotonic). True when it opens a new
  // episode: no failure before, or the latest one is at least `window_ns`
  // older. window_ns 0: every failure opens one.
  bool on_failure(uint64_t now_ns, uint64_t window_ns);
  // Failures in the current episode so far (the opening one included).
  uint64_t failures_in_episode() const { return count_.load(std::memory_order_relaxed); }
  void reset();

 private:
  std::atomic<uint64_t> latest_{0};
  std::atomic<uint64_t> count_{0};
};

}  // namespace gpumemrec
