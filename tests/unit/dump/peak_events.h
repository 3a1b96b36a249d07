// The peak keeper's tests (test_peak_keeper.cpp, test_peak_gap.cpp,
// test_peak_roles.cpp): the ring's events and writer (ring_events.h), sites
// as pairs, and the keeper's passes.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "shim/dump/capture/peak_keeper.h"
#include "shim/dump/capture/peak_replay.h"
#include "tests/unit/dump/ring_events.h"

namespace gpumemrec::peak_test {

using Sites = std::vector<std::pair<uint32_t, uint64_t>>;

inline Sites sites_of(const std::vector<PeakSite>& s) {
  Sites out;
  for (const PeakSite& x : s) out.push_back({x.stack_id, x.bytes});
  return out;
}

// The keeper's passes, `now` well after the events (past kSlackNs).
inline void passes(RingFixture& f, PeakTail* t, uint64_t now, int n = 3) {
  for (int i = 0; i < n; ++i) peak_tail_step(f.ring, t, now + uint64_t(i) * kSlackNs * 2);
}

}  // namespace gpumemrec::peak_test
