// Events for the peak keeper's tests (test_peak_keeper.cpp, test_peak_gap.cpp):
// allocations and frees as the recorder writes them, and a "thread" that
// publishes them into a real ring.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "shim/base/clock.h"
#include "shim/dump/capture/peak_keeper.h"
#include "shim/dump/capture/peak_replay.h"
#include "tests/unit/record/ring_fixture.h"

namespace gpumemrec::peak_test {

constexpr uint64_t kMs = 1000000;

inline Event alloc(uint64_t seq, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack, int device = 0) {
  Event e{};
  e.seq = seq;
  e.time_ns = t;
  e.address = addr;
  e.size = size;
  e.stack_id = stack;
  e.device1 = uint8_t(device + 1);
  e.kind_type = pack_kind_type(EventKind::kAlloc, MemoryType::kDevice);
  return e;
}

inline Event free_of(uint64_t seq, uint64_t t, uint64_t addr, uint64_t size, uint32_t freed_stack, int device = 0) {
  Event e = alloc(seq, t, addr, size, 99, device);
  e.kind_type = pack_kind_type(EventKind::kFree, MemoryType::kDevice);
  e.freed_stack = freed_stack;
  return e;
}

using Sites = std::vector<std::pair<uint32_t, uint64_t>>;

inline Sites sites_of(const std::vector<PeakSite>& s) {
  Sites out;
  for (const PeakSite& x : s) out.push_back({x.stack_id, x.bytes});
  return out;
}

// Events published into a real ring by one "thread" (a block). By default
// 1 ms apart from t0; with `real_clock` each event's time is read before its
// seq is claimed, as the recorder does (claim_marks.h rule 2: the ring's
// marks, which tell a resuming keeper its moment, use that clock).
struct Writer {
  RingFixture& f;
  bool real_clock = false;
  Ring::Block block{};
  uint64_t t = 1000 * kMs;
  uint64_t next_addr = 0x10000;
  void put(Event e) {
    e.time_ns = real_clock ? (t = monotonic_ns()) : (t += kMs);
    const Ring::Ticket k = f.ring.claim(&block);
    e.seq = k.seq;
    f.ring.publish(e, k.gen);
  }
  uint64_t allocate(uint64_t size, uint32_t stack) {
    const uint64_t a = next_addr += 0x1000;
    put(alloc(0, 0, a, size, stack));
    return a;
  }
  void release(uint64_t addr, uint64_t size, uint32_t stack) { put(free_of(0, 0, addr, size, stack)); }
};

// The keeper's passes, `now` well after the events (past kSlackNs).
inline void passes(RingFixture& f, PeakTail* t, uint64_t now, int n = 3) {
  for (int i = 0; i < n; ++i) peak_tail_step(f.ring, t, now + uint64_t(i) * kSlackNs * 2);
}

}  // namespace gpumemrec::peak_test
