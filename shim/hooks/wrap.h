// The one allocating, freeing and mapping wrapper, generic over the backend.
//
// Each family file (cuda_runtime.cpp, cuda_driver.cpp, hip.cpp) defines a
// traits struct and its wrappers are then only what differs: how to call the
// real function, where the address comes back, and the device. Traits:
//
//   struct Traits {
//     using Result = cudaError_t;              // the library's result type
//     static constexpr Result kNotInitialized; // returned when the real function is missing
//     static constexpr int kOom;               // the library's out-of-memory code
//     static int current_device();             // kUnknownDevice when it cannot tell
//     static Result refuse();                  // an out-of-memory result, exactly as the
//   };                                         // library leaves it (last-error state)
#pragma once
#include <cerrno>
#include <cstdint>

#include "shim/base/clock.h"
#include "shim/base/hook_table.h"
#include "shim/dump/dumper.h"
#include "shim/record/device_reset.h"
#include "shim/record/recorder.h"

#define GM_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpumemrec {

// The device argument of wrap_alloc when the backend must be asked.
constexpr int kAskDevice = -2;

// What a successful allocation holds: its address (or handle) and the bytes
// the driver holds for it (pitch * height for pitched allocations).
struct Held {
  uint64_t address;
  uint64_t size;
};

inline uint64_t as_u64(const void* p) { return reinterpret_cast<uint64_t>(p); }
inline uint64_t as_u64(unsigned long long v) { return uint64_t(v); }
inline uint64_t as_u64(unsigned long v) { return uint64_t(v); }

// An allocation: admission (GPUMEMREC_LIMIT / FAIL_AFTER), the real call,
// then the record. `refuse()` produces the out-of-memory result without
// giving the driver the request; `held()` reads the result on success.
// admit() reserves the bytes against the limit; they are released when the
// call fails (record_alloc / record_alloc_failure settle the reservation).
// errno is preserved across our own work.
template <typename T, typename Call, typename HeldFn>
inline typename T::Result run_alloc(HookId id, MemoryType type, int device, uint64_t size, uint64_t stream,
                                    Call&& call, HeldFn&& held) {
  using Rc = typename T::Result;
  // A destroyed context's entries go first: before the limit counts them,
  // and before the driver can hand one of their addresses out again (a
  // created context's are told apart by asking the driver about each
  // address: device_reset.h).
  apply_device_resets_before_alloc(device);
  const Admission adm = admit(id, device, size);
  if (adm.refused != DumpReason::kNone) {
    const uint64_t t0 = monotonic_ns();
    const Rc rc = T::refuse();
    const int saved = errno;
    FailureInfo f;
    if (record_alloc_failure(id, device, size, stream, type, t0, int(rc), true, adm.refused, &f)) dumper_on_failure(f);
    errno = saved;
    return rc;
  }
  const uint64_t t0 = monotonic_ns();
  const Rc rc = call();
  const int saved = errno;
  if (int(rc) == 0) {
    const Held h = held();
    record_alloc(id, device, h.address, h.size, stream, type, t0, 0, adm.reserved);
    if (dumper_thread_has_pending()) dumper_on_success(id, device, size);
  } else {
    FailureInfo f;
    if (record_alloc_failure(id, device, size, stream, type, t0, int(rc), int(rc) == T::kOom, DumpReason::kOom,
                             &f, adm.reserved))
      dumper_on_failure(f);
  }
  errno = saved;
  return rc;
}

// A free: the live entry is taken out before the real call (see recorder.h).
template <typename T, typename Call>
inline typename T::Result run_free(HookId id, MemoryType type, uint64_t key, uint64_t stream, Call&& call) {
  const PendingFree pending = begin_free(key, type);
  const uint64_t t0 = monotonic_ns();
  const typename T::Result rc = call();
  const int saved = errno;
  end_free(id, pending, key, kUnknownDevice, stream, type, t0, int(rc));
  errno = saved;
  return rc;
}

// cuMemMap / cuMemUnmap: an unmap takes its mapping (device, size) out
// before the real call, like a free.
template <typename T, typename Call>
inline typename T::Result run_mapping(HookId id, bool map, int device, uint64_t address, uint64_t size,
                                      Call&& call) {
  const PendingUnmap pending = map ? PendingUnmap{} : begin_unmap(address);
  const uint64_t t0 = monotonic_ns();
  const typename T::Result rc = call();
  const int saved = errno;
  record_mapping(id, map, map ? device : pending.device, address, size, t0, int(rc), pending);
  errno = saved;
  return rc;
}

// The whole wrapper: the real function, the re-entrancy guard (only the
// outermost hooked call of a thread records), the current device asked
// after the guard (so the backend's own calls pass straight through), then
// run_alloc. `call(fn)` calls the real function `fn`.
template <typename T, typename Fn, typename Call, typename HeldFn>
inline typename T::Result wrap_alloc(HookId id, MemoryType type, int device, uint64_t size, uint64_t stream,
                                     Call&& call, HeldFn&& held) {
  const Fn fn = real<Fn>(id);
  if (!fn) return T::kNotInitialized;
  HookScope scope;
  if (!scope.record()) return call(fn);
  if (device == kAskDevice) device = T::current_device();
  return run_alloc<T>(id, type, device, size, stream, [&] { return call(fn); }, held);
}

// The common allocation: fn(out, args...) writes the address to *out and
// holds `size` bytes.
template <typename T, typename Fn, typename Out, typename... Args>
inline typename T::Result wrap_simple_alloc(HookId id, MemoryType type, uint64_t size, uint64_t stream, Out* out,
                                            Args... args) {
  return wrap_alloc<T, Fn>(
      id, type, kAskDevice, size, stream, [&](Fn fn) { return fn(out, args...); },
      [&] { return Held{out ? as_u64(*out) : 0, size}; });
}

// A free or a VMM release: fn(key, args...).
template <typename T, typename Fn, typename Key, typename... Args>
inline typename T::Result wrap_free(HookId id, MemoryType type, Key key, uint64_t stream, Args... args) {
  const Fn fn = real<Fn>(id);
  if (!fn) return T::kNotInitialized;
  HookScope scope;
  if (!scope.record()) return fn(key, args...);
  return run_free<T>(id, type, as_u64(key), stream, [&] { return fn(key, args...); });
}

// cuMemMap / cuMemUnmap: fn(ptr, size, args...).
template <typename T, typename Fn, typename Ptr, typename... Args>
inline typename T::Result wrap_mapping(HookId id, bool map, uint64_t handle, Ptr ptr, size_t size, Args... args) {
  const Fn fn = real<Fn>(id);
  if (!fn) return T::kNotInitialized;
  HookScope scope;
  if (!scope.record()) return fn(ptr, size, args...);
  const int device = map ? device_of_handle(handle) : kUnknownDevice;
  return run_mapping<T>(id, map, device, as_u64(ptr), size, [&] { return fn(ptr, size, args...); });
}

// A call that can destroy a device's primary context (cudaDeviceReset,
// cuDevicePrimaryCtxReset/Release, hipDeviceReset): fn(args...). When it
// succeeds and `destroyed(device)` says the context is gone (a reset always;
// a release only when it dropped the last reference), the device's entries
// are marked for release (record_device_reset, device_reset.h). `device`
// may be kAskDevice (the current one, asked before the call: the reset may
// unbind it).
template <typename T, typename Fn, typename Destroyed, typename... Args>
inline typename T::Result wrap_device_reset(HookId id, int device, Destroyed&& destroyed, Args... args) {
  const Fn fn = real<Fn>(id);
  if (!fn) return T::kNotInitialized;
  HookScope scope;
  if (!scope.record()) return fn(args...);
  if (device == kAskDevice) device = T::current_device();
  const uint64_t t0 = monotonic_ns();
  const typename T::Result rc = fn(args...);
  const int saved = errno;
  if (int(rc) == 0 && device >= 0 && destroyed(device)) record_device_reset(id, device, t0);
  errno = saved;
  return rc;
}
// For a reset: the context is gone whenever the call succeeded.
inline bool context_destroyed_by_reset(int) { return true; }

// A lazily resolved unhooked helper (cudaGetDevice, cuCtxGetDevice ...);
// found or not, the answer is cached (base/symbol_cache.h).
template <typename Fn>
inline Fn helper(SymbolSlot& slot, Library lib, const char* name) {
  return reinterpret_cast<Fn>(helper_function(slot, lib, name));
}

// Refusing like a runtime (CUDA runtime, HIP): ask the real allocator for an
// impossible size so that the library's own error state (cudaGetLastError,
// hipGetLastError) is exactly what a real out-of-memory leaves; the driver
// allocates nothing. The inner call is kept out of the record.
template <typename MallocFn>
inline void refuse_through(HookId malloc_id) {
  if (auto real_malloc = real<MallocFn>(malloc_id)) {
    void* dummy = nullptr;
    HookScope nested;
    (void)real_malloc(&dummy, size_t(1) << 62);
  }
}

}  // namespace gpumemrec
