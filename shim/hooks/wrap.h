// The shape every allocating or freeing wrapper shares, so each wrapper in
// hooks_*.cpp is only what differs: how to call the real function, where the
// address comes back, and the device.
#pragma once
#include <cerrno>
#include <cstdint>

#include "shim/base/clock.h"
#include "shim/base/hook_table.h"
#include "shim/dump/dumper.h"
#include "shim/record/recorder.h"

#define GM_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpumemrec {

constexpr int kOomCode = 2;  // CUDA_ERROR_OUT_OF_MEMORY, cudaErrorMemoryAllocation, hipErrorOutOfMemory

// What a successful allocation holds: its address (or handle) and the bytes
// the driver holds for it (pitch * height for pitched allocations).
struct Held {
  uint64_t address;
  uint64_t size;
};

// An allocation: admission (GPUMEMREC_LIMIT / FAIL_AFTER), the real call,
// then the record. `refuse()` produces the out-of-memory result without
// giving the driver the request; `held()` reads the result on success.
// errno is preserved across our own work.
template <typename Rc, typename Call, typename HeldFn, typename Refuse>
inline Rc run_alloc(HookId id, MemoryType type, int device, uint64_t size, uint64_t stream, Call&& call,
                    HeldFn&& held, Refuse&& refuse) {
  DumpReason why = admit(id, device, size);
  if (why != DumpReason::kNone) {
    const uint64_t t0 = realtime_ns();
    const Rc rc = refuse();
    const int saved = errno;
    FailureInfo f;
    if (record_alloc_failure(id, device, size, stream, type, t0, int(rc), true, why, &f)) dumper_on_failure(f);
    errno = saved;
    return rc;
  }
  const uint64_t t0 = realtime_ns();
  const Rc rc = call();
  const int saved = errno;
  if (int(rc) == 0) {
    const Held h = held();
    record_alloc(id, device, h.address, h.size, stream, type, t0, 0);
  }
  else {
    FailureInfo f;
    if (record_alloc_failure(id, device, size, stream, type, t0, int(rc), int(rc) == kOomCode, DumpReason::kOom, &f))
      dumper_on_failure(f);
  }
  errno = saved;
  return rc;
}

// A free: the live entry is taken out before the real call (see recorder.h).
template <typename Rc, typename Call>
inline Rc run_free(HookId id, MemoryType type, uint64_t key, uint64_t stream, Call&& call) {
  const PendingFree pending = begin_free(key, type);
  const uint64_t t0 = realtime_ns();
  const Rc rc = call();
  const int saved = errno;
  end_free(id, pending, key, kUnknownDevice, stream, type, t0, int(rc));
  errno = saved;
  return rc;
}

template <typename Rc, typename Call>
inline Rc run_mapping(HookId id, bool map, int device, uint64_t address, uint64_t size, Call&& call) {
  const uint64_t t0 = realtime_ns();
  const Rc rc = call();
  const int saved = errno;
  record_mapping(id, map, device, address, size, t0, int(rc));
  errno = saved;
  return rc;
}

// A lazily resolved unhooked helper (cudaGetDevice, cuCtxGetDevice ...).
template <typename Fn>
inline Fn helper(std::atomic<void*>& slot, Library lib, const char* name) {
  void* p = slot.load(std::memory_order_acquire);
  if (!p) {
    p = lookup_library_symbol(lib, name);
    slot.store(p, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(p);
}

}  // namespace gpumemrec
