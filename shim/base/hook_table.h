// Hook identities and access to the real functions behind them.
#pragma once
#include <atomic>
#include <cstdint>

#include "common/event.h"
#include "shim/base/hook_list.h"
#include "shim/base/symbol_cache.h"

namespace gpumemrec {

enum class Library : uint8_t { CUDART, CUDA, HIP };

enum class HookId : uint8_t {
#define GPUMEMREC_ENUM(sym, lib) sym,
  GPUMEMREC_HOOKS(GPUMEMREC_ENUM)
#undef GPUMEMREC_ENUM
  kCount
};
constexpr int kHookCount = int(HookId::kCount);

// Our wrapper of each hook (its address) is known only to the hooks layer:
// see shim/hooks/wrappers.h.
struct HookInfo {
  const char* name;
  Library library;
};
const HookInfo& hook_info(HookId id);
inline const char* hook_name(HookId id) { return hook_info(id).name; }
inline const char* hook_name(uint8_t id) { return id < kHookCount ? hook_info(HookId(id)).name : "?"; }
Backend hook_backend(HookId id);
// An allocation from a stream-ordered pool (cudaMallocAsync and kin): its
// free gives the bytes back to the pool, not to the driver, until a
// synchronization or a trim releases them (live_bytes.h, "pooled").
inline bool hook_stream_ordered(HookId id) {
  switch (id) {
    case HookId::cudaMallocAsync: case HookId::cudaMallocAsync_ptsz:
    case HookId::cudaMallocFromPoolAsync: case HookId::cudaMallocFromPoolAsync_ptsz:
    case HookId::cuMemAllocAsync: case HookId::cuMemAllocAsync_ptsz:
    case HookId::cuMemAllocFromPoolAsync: case HookId::cuMemAllocFromPoolAsync_ptsz:
    case HookId::hipMallocAsync: case HookId::hipMallocFromPoolAsync:
      return true;
    default:
      return false;
  }
}

// Exact-name look-up ("cuMemAlloc_v2"); returns false if not hooked.
bool find_hook(const char* name, HookId* out);

// The real function: resolved once, lock-free, never via our own exports.
// Returns nullptr if no loaded library defines it. The answer, found or not,
// is cached until a library is unloaded (or, for "not found", loaded).
void* real_function(HookId id);

// Records that `addr` is the real implementation of `id` if none is known
// yet; returns the known real address afterwards.
void* adopt_real_function(HookId id, void* addr);

template <typename Fn>
inline Fn real(HookId id) {
  return reinterpret_cast<Fn>(real_function(id));
}

// Look up an unhooked helper (cuMemGetInfo_v2, cudaGetDevice, ...) in the
// given library without going through our dlsym hook. Not cached.
void* lookup_library_symbol(Library lib, const char* name);

// The same, cached in `slot` (a static of the caller), negative answers too.
void* helper_function(SymbolSlot& slot, Library lib, const char* name);

// glibc's own dlsym (our exported dlsym wraps it) and dlclose (our exported
// dlclose wraps it, hooks/dlclose_hook.cpp).
using DlsymFn = void* (*)(void*, const char*);
DlsymFn real_dlsym();
using DlcloseFn = int (*)(void*);
DlcloseFn real_dlclose();

}  // namespace gpumemrec
