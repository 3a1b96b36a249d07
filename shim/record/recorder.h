// The recorder: global state (ring, live tables, stack table, per-device
// counters) and the calls every hook makes around the real function.
//
// A wrapper looks like this (see shim/hooks/wrap.h):
//
//   HookScope scope;                        // re-entrancy guard
//   if (!scope.record()) return real(...);  // nested call or recorder off
//   int dev = ...;                          // current device, before the call
//   apply_device_resets_before_alloc(dev);  // a destroyed context's entries go (device_reset.h)
//   Admission a = admit(id, dev, size);     // LIMIT / FAIL_AFTER; reserves bytes
//   if (a.refused != kNone) return <refuse as OOM>;
//   uint64_t t0 = monotonic_ns();                // the events' clock (see fill())
//   rc = real(...);
//   record_alloc(..., a.reserved) or record_alloc_failure(..., a.reserved)
//
// Only the outermost hooked call on a thread records: cudaMalloc in the shared
// runtime calls cuMemAlloc_v2 through a pointer that is also our wrapper, and
// that inner call passes straight through.
#pragma once
#include <cstdint>

#include "common/config.h"
#include "common/event.h"
#include "shim/base/hook_table.h"
#include "shim/record/failure.h"
#include "shim/record/live_bytes.h"
#include "shim/record/live_table.h"
#include "shim/record/ring.h"
#include "shim/record/stack_table.h"

namespace gpumemrec {

constexpr int kUnknownDevice = -1;

struct Recorder {
  Config cfg;
  Ring ring;
  LiveTable live;     // device / managed allocations by address
  LiveTable handles;  // VMM physical allocations by handle
  LiveTable mappings; // VMM mappings by address (device and size for the unmap)
  StackTable stacks;
  // Live bytes per device: per-thread slabs, an exact counter for a device
  // with a limit (live_bytes.h).
  LiveBytes live_bytes;
  std::atomic<uint64_t> alloc_calls{0};
  uint64_t start_ns = 0;
  bool stacks_enabled = false;
};

// nullptr while uninitialised, while initialising on this thread, or when
// GPUMEMREC_DISABLE is set. Initialises on first use (hooks can run before
// our constructor).
Recorder* recorder();
// True once init ran and found the recorder enabled.
bool recorder_enabled();

// Thread-local re-entrancy guard: record() is true only for the outermost
// hooked call of this thread and only when the recorder is on.
class HookScope {
 public:
  HookScope();
  ~HookScope();
  bool record() const { return record_; }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;

 private:
  bool record_;
};

uint32_t current_tid();

// Checks GPUMEMREC_LIMIT and GPUMEMREC_FAIL_AFTER before an allocation.
// Under a limit the bytes are reserved at once (compare-and-swap on the
// device's exact live counter, live_bytes.h), so concurrent allocations can
// never together exceed it; the reservation is settled by record_alloc (kept, adjusted to
// the bytes really held) or record_alloc_failure (released).
struct Admission {
  DumpReason refused = DumpReason::kNone;
  uint64_t reserved = 0;  // bytes already added to the device's live counter
};
Admission admit(HookId api, int device, uint64_t size);

void record_alloc(HookId api, int device, uint64_t address, uint64_t size, uint64_t stream, MemoryType type,
                  uint64_t t0_ns, int result, uint64_t reserved = 0);
// A failed allocation. For an out-of-memory failure (`oom`) fills *failure
// and returns true: the wrapper then hands it to the dumper.
bool record_alloc_failure(HookId api, int device, uint64_t size, uint64_t stream, MemoryType type, uint64_t t0_ns,
                          int result, bool oom, DumpReason reason, FailureInfo* failure, uint64_t reserved = 0);

// Live bytes of a device as the recorder counts them (reservations included).
uint64_t device_live_bytes(int device);
// Of those, the bytes from stream-ordered pools (gpu_processes.h,
// LiveAtFreeze).
uint64_t device_pooled_bytes(int device);

// Frees: the entry leaves the live table BEFORE the real free, so the driver
// cannot hand the same address to another thread while we still list it.
// The free's event carries the time taken before the real free (`t0_ns`),
// an allocation's the time after the real call returned: a thread that gets
// the same address from the driver afterwards has a later time, so
// events.json (in time order) never shows the reuse before the free.
struct PendingFree {
  bool known = false;
  LiveEntry entry;
};
PendingFree begin_free(uint64_t key, MemoryType type);
void end_free(HookId api, const PendingFree& pending, uint64_t key, int device_hint, uint64_t stream, MemoryType type,
              uint64_t t0_ns, int result);

// cuMemMap / cuMemUnmap: recorded as events, not counted (the handle is).
// A successful map remembers (address -> device, size); the unmap takes it
// out before the real call (begin_unmap) so its event carries the device and
// the device's live bytes, like every other event.
struct PendingUnmap {
  bool known = false;
  int device = -1;
  LiveEntry entry;
};
PendingUnmap begin_unmap(uint64_t address);
void record_mapping(HookId api, bool map, int device, uint64_t address, uint64_t size, uint64_t t0_ns, int result,
                    const PendingUnmap& pending = PendingUnmap{});

// One entry a destroyed primary context took with it (device_reset.cpp;
// the caller took it out of its table): a "deallocation" (an "unmap" for a
// mapping) of api `api` with the destroying call's stack, dated now and on
// this thread (events claimed now and dated earlier would break each
// thread's seq order in time), and the device's live bytes lowered.
void record_released_entry(HookId api, const LiveEntry& le, uint32_t stack);

// The device of a VMM handle (cuMemMap), from the handle table.
int device_of_handle(uint64_t handle);

// fork: the live-table locks are taken around fork (see lifecycle.cpp).
void recorder_atfork_prepare();
void recorder_atfork_parent();
void recorder_atfork_child();

// Stack of the current call (native, and Python when available).
uint32_t capture_stack_id(Recorder* r);

}  // namespace gpumemrec
