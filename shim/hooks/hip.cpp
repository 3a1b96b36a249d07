// HIP wrappers (libamdhip64.so).
#include <hip/hip_runtime_api.h>

#include "shim/hooks/wrap.h"
#include "shim/hooks/proc_address.h"

using namespace gpumemrec;

extern "C" {
// HIP 6 API, newer than the headers this is built against.
typedef int gpumemrec_hipDriverProcAddressQueryResult;
hipError_t hipGetProcAddress(const char* symbol, void** pfn, int hipVersion, uint64_t flags,
                             gpumemrec_hipDriverProcAddressQueryResult* symbolStatus);
}

namespace {

std::atomic<void*> g_get_device{nullptr};

int current_device() {
  auto fn = helper<hipError_t (*)(int*)>(g_get_device, Library::HIP, "hipGetDevice");
  int d = kUnknownDevice;
  if (!fn || fn(&d) != hipSuccess) return kUnknownDevice;
  return d;
}

inline uint64_t u64(const void* p) { return reinterpret_cast<uint64_t>(p); }

// As for the CUDA runtime: let HIP itself fail an impossible request so its
// last-error state matches a real out-of-memory.
hipError_t refuse_like_hip() {
  auto real_malloc = real<hipError_t (*)(void**, size_t)>(HookId::hipMalloc);
  if (real_malloc) {
    void* dummy = nullptr;
    HookScope nested;
    (void)real_malloc(&dummy, size_t(1) << 62);
  }
  return hipErrorOutOfMemory;
}

template <typename Fn, typename... Args>
hipError_t alloc_common(HookId id, MemoryType type, uint64_t size, uint64_t stream, void** out, Args... args) {
  auto fn = real<Fn>(id);
  if (!fn) return hipErrorNotInitialized;
  HookScope scope;
  if (!scope.record()) return fn(out, args...);
  return run_alloc<hipError_t>(
      id, type, current_device(), size, stream, [&] { return fn(out, args...); },
      [&] { return Held{out ? u64(*out) : 0, size}; }, refuse_like_hip);
}

template <typename Fn, typename... Args>
hipError_t free_common(HookId id, void* ptr, uint64_t stream, Args... args) {
  auto fn = real<Fn>(id);
  if (!fn) return hipErrorNotInitialized;
  HookScope scope;
  if (!scope.record()) return fn(ptr, args...);
  return run_free<hipError_t>(id, MemoryType::kDevice, u64(ptr), stream, [&] { return fn(ptr, args...); });
}

}  // namespace

GM_EXPORT hipError_t hipMalloc(void** ptr, size_t size) {
  return alloc_common<hipError_t (*)(void**, size_t)>(HookId::hipMalloc, MemoryType::kDevice, size, 0, ptr, size);
}

GM_EXPORT hipError_t hipFree(void* ptr) {
  return free_common<hipError_t (*)(void*)>(HookId::hipFree, ptr, 0);
}

GM_EXPORT hipError_t hipExtMallocWithFlags(void** ptr, size_t sizeBytes, unsigned int flags) {
  return alloc_common<hipError_t (*)(void**, size_t, unsigned int)>(HookId::hipExtMallocWithFlags,
                                                                    MemoryType::kDevice, sizeBytes, 0, ptr,
                                                                    sizeBytes, flags);
}

GM_EXPORT hipError_t hipMallocManaged(void** dev_ptr, size_t size, unsigned int flags) {
  return alloc_common<hipError_t (*)(void**, size_t, unsigned int)>(HookId::hipMallocManaged, MemoryType::kManaged,
                                                                    size, 0, dev_ptr, size, flags);
}

GM_EXPORT hipError_t hipMallocAsync(void** dev_ptr, size_t size, hipStream_t stream) {
  return alloc_common<hipError_t (*)(void**, size_t, hipStream_t)>(HookId::hipMallocAsync, MemoryType::kDevice, size,
                                                                   u64(stream), dev_ptr, size, stream);
}

GM_EXPORT hipError_t hipFreeAsync(void* dev_ptr, hipStream_t stream) {
  return free_common<hipError_t (*)(void*, hipStream_t)>(HookId::hipFreeAsync, dev_ptr, u64(stream), stream);
}

GM_EXPORT hipError_t hipMallocFromPoolAsync(void** dev_ptr, size_t size, hipMemPool_t mem_pool, hipStream_t stream) {
  return alloc_common<hipError_t (*)(void**, size_t, hipMemPool_t, hipStream_t)>(
      HookId::hipMallocFromPoolAsync, MemoryType::kDevice, size, u64(stream), dev_ptr, size, mem_pool, stream);
}

GM_EXPORT hipError_t hipMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  auto fn = real<hipError_t (*)(void**, size_t*, size_t, size_t)>(HookId::hipMallocPitch);
  if (!fn) return hipErrorNotInitialized;
  HookScope scope;
  if (!scope.record()) return fn(ptr, pitch, width, height);
  const uint64_t asked = uint64_t(width) * height;
  return run_alloc<hipError_t>(
      HookId::hipMallocPitch, MemoryType::kDevice, current_device(), asked, 0,
      [&] { return fn(ptr, pitch, width, height); },
      [&] { return Held{ptr ? u64(*ptr) : 0, pitch ? uint64_t(*pitch) * height : asked}; }, refuse_like_hip);
}

GM_EXPORT hipError_t hipMemCreate(hipMemGenericAllocationHandle_t* handle, size_t size,
                                  const hipMemAllocationProp* prop, unsigned long long flags) {
  auto fn = real<hipError_t (*)(hipMemGenericAllocationHandle_t*, size_t, const hipMemAllocationProp*,
                                unsigned long long)>(HookId::hipMemCreate);
  if (!fn) return hipErrorNotInitialized;
  HookScope scope;
  if (!scope.record()) return fn(handle, size, prop, flags);
  int device = prop && prop->location.type == hipMemLocationTypeDevice ? prop->location.id : current_device();
  return run_alloc<hipError_t>(
      HookId::hipMemCreate, MemoryType::kPhysical, device, size, 0, [&] { return fn(handle, size, prop, flags); },
      [&] { return Held{handle ? u64(*handle) : 0, size}; }, [] { return hipErrorOutOfMemory; });
}

GM_EXPORT hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle) {
  auto fn = real<hipError_t (*)(hipMemGenericAllocationHandle_t)>(HookId::hipMemRelease);
  if (!fn) return hipErrorNotInitialized;
  HookScope scope;
  if (!scope.record()) return fn(handle);
  return run_free<hipError_t>(HookId::hipMemRelease, MemoryType::kPhysical, u64(handle), 0,
                              [&] { return fn(handle); });
}

GM_EXPORT hipError_t hipMemMap(void* ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                               unsigned long long flags) {
  auto fn = real<hipError_t (*)(void*, size_t, size_t, hipMemGenericAllocationHandle_t, unsigned long long)>(
      HookId::hipMemMap);
  if (!fn) return hipErrorNotInitialized;
  HookScope scope;
  if (!scope.record()) return fn(ptr, size, offset, handle, flags);
  return run_mapping<hipError_t>(HookId::hipMemMap, true, device_of_handle(u64(handle)), u64(ptr), size,
                                 [&] { return fn(ptr, size, offset, handle, flags); });
}

GM_EXPORT hipError_t hipMemUnmap(void* ptr, size_t size) {
  auto fn = real<hipError_t (*)(void*, size_t)>(HookId::hipMemUnmap);
  if (!fn) return hipErrorNotInitialized;
  HookScope scope;
  if (!scope.record()) return fn(ptr, size);
  return run_mapping<hipError_t>(HookId::hipMemUnmap, false, kUnknownDevice, u64(ptr), size,
                                 [&] { return fn(ptr, size); });
}

GM_EXPORT hipError_t hipGetProcAddress(const char* symbol, void** pfn, int hipVersion, uint64_t flags,
                                       gpumemrec_hipDriverProcAddressQueryResult* symbolStatus) {
  auto fn = real<decltype(&hipGetProcAddress)>(HookId::hipGetProcAddress);
  if (!fn) return hipErrorNotInitialized;
  hipError_t rc = fn(symbol, pfn, hipVersion, flags, symbolStatus);
  if (rc == hipSuccess && pfn && *pfn) *pfn = swap_hip_proc(symbol, *pfn);
  return rc;
}
