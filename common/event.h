// The event record the shim writes into the ring (shim/record/ring.h); its
// kind and memory type are the bundle schema's enums (common/bundle_schema.h).
// One record is exactly 64 bytes so the ring's memory is RING_EVENTS * 64
// bytes, fixed at start-up.
#pragma once
#include <cstdint>

#include "common/bundle_schema.h"

namespace gpumemrec {

// Written by one thread, read by the dumper under a per-slot seqlock: `seq`
// is zero while the slot is being written and the event's sequence number
// once it is complete (see shim/record/ring.h).
struct Event {
  uint64_t seq;          // 1-based, global to the process
  uint64_t time_ns;      // CLOCK_REALTIME at return from the real call
  uint64_t address;      // device pointer, VMM handle, or 0
  uint64_t size;         // bytes asked for / released (0 when unknown)
  uint64_t stream;       // stream handle for stream-ordered calls, else 0
  union {
    // At the dump: live bytes on `device` after this event (derived there,
    // shim/dump/capture/history.h).
    uint64_t live_after;
    // In the ring: a free's (or a destroyed context's release), the stack id
    // of the allocation it frees (the peak keeper's replay,
    // shim/dump/capture/peak_replay.h); 0 otherwise.
    uint64_t freed_stack;
  };
  uint32_t stack_id;     // 0 = none
  uint32_t tid : 24;     // Linux thread id (pid_max is at most 2^22)
  uint32_t device1 : 8;  // device ordinal + 1; 0 = unknown
  uint32_t duration_ns;  // time in the real call, saturating
  int16_t result;        // return code the program saw
  uint8_t api;           // shim HookId
  uint8_t kind_type;     // EventKind in low 4 bits, MemoryType in high 4 bits
};

// Keep this assert: a bigger record is a regression (the benchmark reports it).
static_assert(sizeof(Event) == 64, "ring events must stay 64 bytes");

inline int event_device(const Event& e) { return int(e.device1) - 1; }
inline EventKind event_kind(const Event& e) { return EventKind(e.kind_type & 0xF); }
inline MemoryType event_memory_type(const Event& e) { return MemoryType(e.kind_type >> 4); }
inline uint8_t pack_kind_type(EventKind k, MemoryType t) { return uint8_t(uint8_t(k) | (uint8_t(t) << 4)); }

}  // namespace gpumemrec
