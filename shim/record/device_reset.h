// A device's primary context destroyed (cudaDeviceReset,
// cuDevicePrimaryCtxReset, the last cuDevicePrimaryCtxRelease,
// hipDeviceReset): the driver freed everything the process held on the
// device, and the recorder's tables must let it go. A created context
// destroyed (cuCtxDestroy): the same, for what that context held.
//
// Lazily, for the exit bundle's sake: the CUDA runtime and libraries that
// retain a primary context tear it down while the process exits (an atexit
// handler or a destructor, before our own exit handler runs), and
// GPUMEMREC_DUMP_AT_EXIT's bundle is "what the program never freed". So a
// destroying call only marks the device (record_device_reset); its entries
// are released, each with an event of that call's api and stack (dated when
// released, on the releasing thread: see record_released_entry), by the
// next of:
//   - an allocation call on that device (the program goes on using it: the
//     memory is gone from the card, and the new allocations must not meet
//     phantoms),
//   - any bundle but the exit bundle (the live set at an out-of-memory is
//     the card's).
// An exit bundle therefore still lists what a context held when it was
// destroyed with the device left unused since.
//
// The hot path reads one word, on its own cache line and written only when
// a destroying call comes or its releases are applied.
#pragma once
#include <atomic>
#include <cstdint>

#include "shim/base/hook_table.h"

namespace gpumemrec {

// Devices with a release pending (0 almost always).
struct alignas(64) ResetsPending {
  std::atomic<uint32_t> count{0};
};
extern ResetsPending g_resets_pending;

// Marks `device`'s primary context destroyed by `api`, whose call began at
// `t0_ns` (CLOCK_MONOTONIC): entries allocated before then are the
// context's. A release still pending for the device is applied first.
void record_device_reset(HookId api, int device, uint64_t t0_ns);

// A context made with cuCtxCreate destroyed by `api` (cuCtxDestroy): the
// driver freed what was allocated in it, and only that. Which entries those
// were is asked of the driver when the release is applied: entries of
// `device` older than `t0_ns` for which `still_held(address)` says no (the
// driver no longer knows the address) are released; the others (another
// context's, a pool's that outlives it) stay. Not VMM handles and mappings
// (not a context's), not HIP's. Applied lazily, like a reset.
using StillHeld = bool (*)(uint64_t address);
void record_context_destroy(HookId api, int device, uint64_t t0_ns, StillHeld still_held);

// Releases what is pending for `device` (-1: every device); returns the
// entries released. Host memory for the walk comes from mmap: on failure
// (memory short) the release stays pending and nothing is lost.
uint64_t apply_device_resets(int device);

// At the top of an allocation wrapper (hooks/wrap.h, run_alloc), before
// the limit counts and before the driver is called: once the driver hands
// a destroyed address out again, a created context's question would find it
// held. An unknown device (-1) applies every device's: the allocation may be
// on the reset one.
inline void apply_device_resets_before_alloc(int device) {
  if (__builtin_expect(g_resets_pending.count.load(std::memory_order_relaxed) != 0, 0)) apply_device_resets(device);
}

// In a fork child: the lock another thread may have held is free.
void device_resets_after_fork();

}  // namespace gpumemrec
