#include "shim/hooks/proc_address.h"

#include <cstring>

#include "shim/base/hook_table.h"
#include "shim/base/log.h"
#include "shim/hooks/wrappers.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

// Known driver ABIs by (name, minimum version, per-thread flag), used only
// when the driver hands out an address that is not its exported function.
// Versions newer than kNewestKnownVersion are never guessed: a future _v3
// ABI must not receive a _v2 wrapper.
constexpr int kNewestKnownVersion = 13090;
constexpr uint64_t kPerThreadFlag = 2;  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

struct KnownAbi {
  const char* symbol;
  int min_version;
  HookId legacy;  // flags without the per-thread bit
  HookId per_thread;
};

const KnownAbi kKnownAbis[] = {
    {"cuMemAlloc", 3020, HookId::cuMemAlloc_v2, HookId::cuMemAlloc_v2},
    {"cuMemAllocPitch", 3020, HookId::cuMemAllocPitch_v2, HookId::cuMemAllocPitch_v2},
    {"cuMemFree", 3020, HookId::cuMemFree_v2, HookId::cuMemFree_v2},
    {"cuMemAllocManaged", 6000, HookId::cuMemAllocManaged, HookId::cuMemAllocManaged},
    {"cuMemAllocAsync", 11020, HookId::cuMemAllocAsync, HookId::cuMemAllocAsync_ptsz},
    {"cuMemFreeAsync", 11020, HookId::cuMemFreeAsync, HookId::cuMemFreeAsync_ptsz},
    {"cuMemAllocFromPoolAsync", 11020, HookId::cuMemAllocFromPoolAsync, HookId::cuMemAllocFromPoolAsync_ptsz},
    {"cuMemCreate", 10020, HookId::cuMemCreate, HookId::cuMemCreate},
    {"cuMemRelease", 10020, HookId::cuMemRelease, HookId::cuMemRelease},
    {"cuMemMap", 10020, HookId::cuMemMap, HookId::cuMemMap},
    {"cuMemUnmap", 10020, HookId::cuMemUnmap, HookId::cuMemUnmap},
    {"cuDevicePrimaryCtxReset", 11000, HookId::cuDevicePrimaryCtxReset_v2, HookId::cuDevicePrimaryCtxReset_v2},
    {"cuDevicePrimaryCtxRelease", 11000, HookId::cuDevicePrimaryCtxRelease_v2,
     HookId::cuDevicePrimaryCtxRelease_v2},
    {"cuCtxDestroy", 4000, HookId::cuCtxDestroy_v2, HookId::cuCtxDestroy_v2},
    {"cuGetProcAddress", 12000, HookId::cuGetProcAddress_v2, HookId::cuGetProcAddress_v2},
};

// `name` is `symbol` itself or `symbol` followed by a suffix (_v2, _ptsz).
bool is_variant_of(const char* name, const char* symbol) {
  size_t n = std::strlen(symbol);
  return std::strncmp(name, symbol, n) == 0 && (name[n] == '\0' || name[n] == '_');
}

}  // namespace

void* swap_dlsym_result(const char* name, void* addr) {
  if (!addr || !name) return addr;
  HookId id;
  if (!find_hook(name, &id)) return addr;
  if (!recorder_enabled()) return addr;
  void* known = adopt_real_function(id, addr);
  return known == addr ? wrapper_of(id) : addr;
}

void* swap_driver_proc(const char* symbol, void* addr, int version, uint64_t flags) {
  if (!symbol || !addr || std::strncmp(symbol, "cu", 2) != 0) return addr;
  if (!recorder_enabled()) return addr;
  // 1. The driver handed out one of the exported functions we wrap.
  for (int i = 0; i < kHookCount; ++i) {
    const HookInfo& h = hook_info(HookId(i));
    if (h.library != Library::CUDA || !is_variant_of(h.name, symbol)) continue;
    if (real_function(HookId(i)) == addr) return wrapper_of(HookId(i));
  }
  // 2. An internal address for an ABI we know.
  if (version > kNewestKnownVersion) return addr;
  for (const auto& k : kKnownAbis) {
    if (std::strcmp(k.symbol, symbol) != 0 || version < k.min_version) continue;
    HookId id = (flags & kPerThreadFlag) ? k.per_thread : k.legacy;
    void* real_addr = adopt_real_function(id, addr);
    if (!real_addr) return addr;
    GM_DEBUG("cuGetProcAddress({}, {}, {}) returned a non-exported entry point; wrapping it as {}", symbol, version,
             flags, hook_name(id));
    return wrapper_of(id);
  }
  return addr;
}

void* swap_hip_proc(const char* symbol, void* addr) {
  if (!symbol || !addr || std::strncmp(symbol, "hip", 3) != 0) return addr;
  if (!recorder_enabled()) return addr;
  HookId id;
  if (!find_hook(symbol, &id) || hook_info(id).library != Library::HIP) return addr;
  void* known = adopt_real_function(id, addr);
  return known == addr ? wrapper_of(id) : addr;
}

}  // namespace gpumemrec
