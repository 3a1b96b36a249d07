// HIP wrappers (libamdhip64.so).
#include <hip/hip_runtime_api.h>

#include "shim/hooks/proc_address.h"
#include "shim/hooks/wrap.h"
#include "shim/hooks/wrappers.h"

using namespace gpumemrec;

extern "C" {
// HIP 6 API, newer than the headers this is built against.
typedef int gpumemrec_hipDriverProcAddressQueryResult;
hipError_t hipGetProcAddress(const char* symbol, void** pfn, int hipVersion, uint64_t flags,
                             gpumemrec_hipDriverProcAddressQueryResult* symbolStatus);
}

// The C prototypes of the hooked functions: hip_runtime_api.h also declares
// C++ template overloads of several, so `&::hipMalloc` alone is ambiguous.
using Fn_hipMalloc = hipError_t (*)(void**, size_t);
using Fn_hipFree = hipError_t (*)(void*);
using Fn_hipExtMallocWithFlags = hipError_t (*)(void**, size_t, unsigned int);
using Fn_hipMallocManaged = hipError_t (*)(void**, size_t, unsigned int);
using Fn_hipMallocAsync = hipError_t (*)(void**, size_t, hipStream_t);
using Fn_hipFreeAsync = hipError_t (*)(void*, hipStream_t);
using Fn_hipMallocFromPoolAsync = hipError_t (*)(void**, size_t, hipMemPool_t, hipStream_t);
using Fn_hipMallocPitch = hipError_t (*)(void**, size_t*, size_t, size_t);
using Fn_hipMemCreate = hipError_t (*)(hipMemGenericAllocationHandle_t*, size_t, const hipMemAllocationProp*, unsigned long long);
using Fn_hipMemRelease = hipError_t (*)(hipMemGenericAllocationHandle_t);
using Fn_hipMemMap = hipError_t (*)(void*, size_t, size_t, hipMemGenericAllocationHandle_t, unsigned long long);
using Fn_hipMemUnmap = hipError_t (*)(void*, size_t);
using Fn_hipDeviceReset = hipError_t (*)();
using Fn_hipDevicePrimaryCtxReset = hipError_t (*)(hipDevice_t);
using Fn_hipGetProcAddress = decltype(&hipGetProcAddress);

namespace {

SymbolSlot g_get_device;

struct Hip {
  using Result = hipError_t;
  static constexpr Result kNotInitialized = hipErrorNotInitialized;
  static constexpr int kOom = hipErrorOutOfMemory;
  static int current_device() {
    auto fn = helper<hipError_t (*)(int*)>(g_get_device, Library::HIP, "hipGetDevice");
    int d = kUnknownDevice;
    if (!fn || fn(&d) != hipSuccess) return kUnknownDevice;
    return d;
  }
  // As for the CUDA runtime: let HIP itself fail an impossible request so its
  // last-error state matches a real out-of-memory.
  static Result refuse() {
    refuse_through<Fn_hipMalloc>(HookId::hipMalloc);
    return hipErrorOutOfMemory;
  }
};

constexpr auto kDevice = MemoryType::kDevice;

}  // namespace

GM_EXPORT hipError_t hipMalloc(void** ptr, size_t size) {
  return wrap_simple_alloc<Hip, Fn_hipMalloc>(HookId::hipMalloc, kDevice, size, 0, ptr, size);
}

GM_EXPORT hipError_t hipFree(void* ptr) {
  return wrap_free<Hip, Fn_hipFree>(HookId::hipFree, kDevice, ptr, 0);
}

GM_EXPORT hipError_t hipExtMallocWithFlags(void** ptr, size_t sizeBytes, unsigned int flags) {
  return wrap_simple_alloc<Hip, Fn_hipExtMallocWithFlags>(HookId::hipExtMallocWithFlags, kDevice,
                                                                              sizeBytes, 0, ptr, sizeBytes, flags);
}

GM_EXPORT hipError_t hipMallocManaged(void** dev_ptr, size_t size, unsigned int flags) {
  return wrap_simple_alloc<Hip, Fn_hipExtMallocWithFlags>(
      HookId::hipMallocManaged, MemoryType::kManaged, size, 0, dev_ptr, size, flags);
}

GM_EXPORT hipError_t hipMallocAsync(void** dev_ptr, size_t size, hipStream_t stream) {
  return wrap_simple_alloc<Hip, Fn_hipMallocAsync>(HookId::hipMallocAsync, kDevice, size,
                                                                             as_u64(stream), dev_ptr, size, stream);
}

GM_EXPORT hipError_t hipFreeAsync(void* dev_ptr, hipStream_t stream) {
  return wrap_free<Hip, Fn_hipFreeAsync>(HookId::hipFreeAsync, kDevice, dev_ptr, as_u64(stream),
                                                            stream);
}

GM_EXPORT hipError_t hipMallocFromPoolAsync(void** dev_ptr, size_t size, hipMemPool_t mem_pool, hipStream_t stream) {
  return wrap_simple_alloc<Hip, Fn_hipMallocFromPoolAsync>(
      HookId::hipMallocFromPoolAsync, kDevice, size, as_u64(stream), dev_ptr, size, mem_pool, stream);
}

GM_EXPORT hipError_t hipMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  using Fn = Fn_hipMallocPitch;
  const uint64_t asked = uint64_t(width) * height;
  return wrap_alloc<Hip, Fn>(
      HookId::hipMallocPitch, kDevice, kAskDevice, asked, 0, [&](Fn fn) { return fn(ptr, pitch, width, height); },
      [&] { return Held{ptr ? as_u64(*ptr) : 0, pitch ? uint64_t(*pitch) * height : asked}; });
}

GM_EXPORT hipError_t hipMemCreate(hipMemGenericAllocationHandle_t* handle, size_t size,
                                  const hipMemAllocationProp* prop, unsigned long long flags) {
  using Fn = Fn_hipMemCreate;
  const int device = prop && prop->location.type == hipMemLocationTypeDevice ? prop->location.id : kAskDevice;
  return wrap_alloc<Hip, Fn>(
      HookId::hipMemCreate, MemoryType::kPhysical, device, size, 0, [&](Fn fn) { return fn(handle, size, prop, flags); },
      [&] { return Held{handle ? as_u64(*handle) : 0, size}; });
}

GM_EXPORT hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle) {
  return wrap_free<Hip, Fn_hipMemRelease>(HookId::hipMemRelease, MemoryType::kPhysical,
                                                                          handle, 0);
}

GM_EXPORT hipError_t hipMemMap(void* ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                               unsigned long long flags) {
  return wrap_mapping<Hip, Fn_hipMemMap>(
      HookId::hipMemMap, true, as_u64(handle), ptr, size, offset, handle, flags);
}

GM_EXPORT hipError_t hipMemUnmap(void* ptr, size_t size) {
  return wrap_mapping<Hip, Fn_hipMemUnmap>(HookId::hipMemUnmap, false, 0, ptr, size);
}

// The device's primary context destroyed: every allocation of it freed.
GM_EXPORT hipError_t hipDeviceReset() {
  return wrap_device_reset<Hip, Fn_hipDeviceReset>(HookId::hipDeviceReset, kAskDevice, context_destroyed_by_reset);
}

GM_EXPORT hipError_t hipDevicePrimaryCtxReset(hipDevice_t dev) {
  return wrap_device_reset<Hip, Fn_hipDevicePrimaryCtxReset>(HookId::hipDevicePrimaryCtxReset, int(dev),
                                                             context_destroyed_by_reset, dev);
}

GM_EXPORT hipError_t hipGetProcAddress(const char* symbol, void** pfn, int hipVersion, uint64_t flags,
                                       gpumemrec_hipDriverProcAddressQueryResult* symbolStatus) {
  auto fn = real<decltype(&hipGetProcAddress)>(HookId::hipGetProcAddress);
  if (!fn) return hipErrorNotInitialized;
  hipError_t rc = fn(symbol, pfn, hipVersion, flags, symbolStatus);
  if (rc == hipSuccess && pfn && *pfn) *pfn = swap_hip_proc(symbol, *pfn);
  return rc;
}

namespace gpumemrec {
#define GPUMEMREC_HIP_WRAPPER_ADDRESS(sym, lib) reinterpret_cast<void*>(static_cast<Fn_##sym>(&::sym)),
void* const kHipWrappers[kHipHookCount] = {GPUMEMREC_HOOKS_HIP(GPUMEMREC_HIP_WRAPPER_ADDRESS)};
#undef GPUMEMREC_HIP_WRAPPER_ADDRESS
}  // namespace gpumemrec
