// The event record shared by the shim (which writes it into the ring) and
// the tools (which read the JSON form back). One record is exactly 64 bytes
// so the ring's memory is RING_EVENTS * 64 bytes, fixed at start-up.
#pragma once
#include <cstdint>

namespace gpumemrec {

enum class EventKind : uint8_t {
  kAlloc = 0,       // allocation succeeded
  kFree = 1,        // free succeeded
  kOom = 2,         // allocation failed with the out-of-memory code
  kAllocFailed = 3, // allocation failed with another code
  kFreeFailed = 4,  // free returned an error
  kMap = 5,         // cuMemMap / hipMemMap
  kUnmap = 6,       // cuMemUnmap / hipMemUnmap
};

enum class MemoryType : uint8_t {
  kDevice = 0,
  kManaged = 1,
  kPhysical = 2,  // VMM handle (cuMemCreate / hipMemCreate): counted by handle
  kMapping = 3,   // a cuMemMap range; never counted (the handle is)
};

enum class Backend : uint8_t { kCuda = 0, kHip = 1 };

// Written by one thread, read by the dumper under a per-slot seqlock: `seq`
// is zero while the slot is being written and the event's sequence number
// once it is complete (see shim/ring.h).
struct Event {
  uint64_t seq;          // 1-based, global to the process
  uint64_t time_ns;      // CLOCK_REALTIME at return from the real call
  uint64_t address;      // device pointer, VMM handle, or 0
  uint64_t size;         // bytes asked for / released (0 when unknown)
  uint64_t stream;       // stream handle for stream-ordered calls, else 0
  uint64_t live_after;   // live bytes on `device` after this event
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

const char* event_type_name(EventKind k);   // "allocation", "deallocation", "oom", ...
const char* memory_type_name(MemoryType t); // "device", "managed", "physical", "mapping"
const char* backend_name(Backend b);        // "cuda", "rocm"

}  // namespace gpumemrec
