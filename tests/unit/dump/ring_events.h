// Events for the peak keeper's and the status region's tests (peak_events.h
// adds the keeper's helpers): allocations
// and frees as the recorder fills them (shim/record/recorder.cpp), and a
// "thread" publishing them into a real ring (a block of seqs, 1 ms apart).
#pragma once
#include <cstdint>

#include "common/event.h"
#include "shim/base/clock.h"
#include "tests/unit/record/ring_fixture.h"

namespace gpumemrec {

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

// Events published into a real ring by one "thread" (a block). By default
// 1 ms apart from t0; with `real_clock` each event's time is read before its
// seq is claimed, as the recorder does (claim_marks.h rule 2: the ring's
// marks, which tell a resuming peak keeper its moment, use that clock).
struct Writer {
  RingFixture& f;
  bool real_clock = false;
  Ring::Block block{};
  uint64_t t = 1000 * kMs;
  uint64_t next_addr = 0x10000;
  int device = 0;
  void put(Event e) {
    e.time_ns = real_clock ? (t = monotonic_ns()) : (t += kMs);
    const Ring::Ticket k = f.ring.claim(&block);
    e.seq = k.seq;
    f.ring.publish(e, k.gen);
  }
  // An allocation of `size` at `stack`; its address.
  uint64_t allocate(uint64_t size, uint32_t stack) {
    const uint64_t a = next_addr += 0x1000;
    put(alloc(0, 0, a, size, stack, device));
    return a;
  }
  void release(uint64_t addr, uint64_t size, uint32_t stack) { put(free_of(0, 0, addr, size, stack, device)); }
};

}  // namespace gpumemrec
