// CUDA driver wrappers (libcuda.so.1), including the entry-point look-up
// (cuGetProcAddress) that NVIDIA's static runtime, CuPy and PyTorch use.
//
// wrap.h comes before cuda.h: cuda.h #defines cuGetProcAddress as
// cuGetProcAddress_v2, which would rename our HookId enumerators.
#include "shim/hooks/wrap.h"
#include "shim/hooks/proc_address.h"
#include "shim/hooks/wrappers.h"

#include <cuda.h>

// cuda.h maps cuGetProcAddress (and the primary-context calls whose
// semantics changed in CUDA 11) to their _v2 names; we export both ABIs.
#undef cuGetProcAddress
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxRelease
#undef cuCtxDestroy

using namespace gpumemrec;

extern "C" {
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUresult cuDevicePrimaryCtxReset(CUdevice dev);
CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult cuCtxDestroy(CUcontext ctx);
}

namespace {

SymbolSlot g_ctx_get_device;
SymbolSlot g_primary_state;
SymbolSlot g_ctx_push, g_ctx_pop, g_pointer_attribute;

struct Drv {
  using Result = CUresult;
  static constexpr Result kNotInitialized = CUDA_ERROR_NOT_INITIALIZED;
  static constexpr int kOom = CUDA_ERROR_OUT_OF_MEMORY;
  static int current_device() {
    auto fn = helper<CUresult (*)(CUdevice*)>(g_ctx_get_device, Library::CUDA, "cuCtxGetDevice");
    CUdevice d = 0;
    if (!fn || fn(&d) != CUDA_SUCCESS) return kUnknownDevice;
    return int(d);
  }
  // The driver keeps no last-error state: the code is the whole answer.
  static Result refuse() { return CUDA_ERROR_OUT_OF_MEMORY; }
};

// After a successful cuDevicePrimaryCtxRelease: the context is destroyed
// when that was its last reference ("If there are no more references to the
// primary context it will be destroyed", the driver API's documentation),
// which cuDevicePrimaryCtxGetState then reports as inactive. Unknown (no
// answer): nothing is released.
bool primary_context_inactive(int device) {
  auto fn = helper<CUresult (*)(CUdevice, unsigned int*, int*)>(g_primary_state, Library::CUDA,
                                                                 "cuDevicePrimaryCtxGetState");
  unsigned int flags = 0;
  int active = 1;
  return fn && fn(CUdevice(device), &flags, &active) == CUDA_SUCCESS && active == 0;
}

constexpr auto kDevice = MemoryType::kDevice;

// The device of a context about to be destroyed: made current for the
// question and popped again (the driver has no call that asks a context
// that is not current). kUnknownDevice when the driver does not say.
int device_of_context(CUcontext ctx) {
  auto push = helper<CUresult (*)(CUcontext)>(g_ctx_push, Library::CUDA, "cuCtxPushCurrent_v2");
  auto pop = helper<CUresult (*)(CUcontext*)>(g_ctx_pop, Library::CUDA, "cuCtxPopCurrent_v2");
  if (!ctx || !push || !pop || push(ctx) != CUDA_SUCCESS) return kUnknownDevice;
  const int device = Drv::current_device();
  CUcontext popped = nullptr;
  pop(&popped);
  return device;
}

// After a context's destruction: whether the driver still knows the address
// (cuda.h on cuPointerGetAttribute: "If ptr is not a valid CUDA pointer then
// CUDA_ERROR_INVALID_VALUE is returned"). Any other answer keeps the entry.
// Called when the release is applied (device_reset.h).
bool cuda_address_still_held(uint64_t address) {
  auto fn = helper<CUresult (*)(void*, CUpointer_attribute, CUdeviceptr)>(g_pointer_attribute, Library::CUDA,
                                                                            "cuPointerGetAttribute");
  unsigned int type = 0;  // the attribute every CUDA allocation has (device, host, managed, a pool's)
  return !fn || fn(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(address)) != CUDA_ERROR_INVALID_VALUE;
}

// cuCtxDestroy (v1 and _v2 take the same argument): PyCUDA's
// Context.detach, cuda-python programs that make a context per engine.
template <typename Fn>
CUresult wrap_context_destroy(HookId id, CUcontext ctx) {
  const Fn fn = real<Fn>(id);
  if (!fn) return CUDA_ERROR_NOT_INITIALIZED;
  HookScope scope;
  if (!scope.record()) return fn(ctx);
  const int device = device_of_context(ctx);
  const uint64_t t0 = monotonic_ns();
  const CUresult rc = fn(ctx);
  const int saved = errno;
  if (rc == CUDA_SUCCESS && device >= 0) record_context_destroy(id, device, t0, cuda_address_still_held);
  errno = saved;
  return rc;
}

}  // namespace

GM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return wrap_simple_alloc<Drv, decltype(&cuMemAlloc_v2)>(HookId::cuMemAlloc_v2, kDevice, bytesize, 0, dptr, bytesize);
}

GM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                                      unsigned int ElementSizeBytes) {
  using Fn = decltype(&cuMemAllocPitch_v2);
  const uint64_t asked = uint64_t(WidthInBytes) * Height;
  return wrap_alloc<Drv, Fn>(
      HookId::cuMemAllocPitch_v2, kDevice, kAskDevice, asked, 0,
      [&](Fn fn) { return fn(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes); },
      [&] { return Held{dptr ? as_u64(*dptr) : 0, pPitch ? uint64_t(*pPitch) * Height : asked}; });
}

GM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  return wrap_simple_alloc<Drv, decltype(&cuMemAllocManaged)>(HookId::cuMemAllocManaged, MemoryType::kManaged,
                                                              bytesize, 0, dptr, bytesize, flags);
}

GM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return wrap_simple_alloc<Drv, decltype(&cuMemAllocAsync)>(HookId::cuMemAllocAsync, kDevice, bytesize,
                                                            as_u64(hStream), dptr, bytesize, hStream);
}

GM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return wrap_simple_alloc<Drv, decltype(&cuMemAllocAsync_ptsz)>(HookId::cuMemAllocAsync_ptsz, kDevice, bytesize,
                                                                 as_u64(hStream), dptr, bytesize, hStream);
}

GM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  return wrap_simple_alloc<Drv, decltype(&cuMemAllocFromPoolAsync)>(
      HookId::cuMemAllocFromPoolAsync, kDevice, bytesize, as_u64(hStream), dptr, bytesize, pool, hStream);
}

GM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                CUstream hStream) {
  return wrap_simple_alloc<Drv, decltype(&cuMemAllocFromPoolAsync_ptsz)>(
      HookId::cuMemAllocFromPoolAsync_ptsz, kDevice, bytesize, as_u64(hStream), dptr, bytesize, pool, hStream);
}

GM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return wrap_free<Drv, decltype(&cuMemFree_v2)>(HookId::cuMemFree_v2, kDevice, dptr, 0);
}

GM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return wrap_free<Drv, decltype(&cuMemFreeAsync)>(HookId::cuMemFreeAsync, kDevice, dptr, as_u64(hStream), hStream);
}

GM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return wrap_free<Drv, decltype(&cuMemFreeAsync_ptsz)>(HookId::cuMemFreeAsync_ptsz, kDevice, dptr, as_u64(hStream),
                                                        hStream);
}

// --- Virtual memory management: physical memory lives with the handle.

GM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                               unsigned long long flags) {
  using Fn = decltype(&cuMemCreate);
  const int device = prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : kAskDevice;
  return wrap_alloc<Drv, Fn>(
      HookId::cuMemCreate, MemoryType::kPhysical, device, size, 0, [&](Fn fn) { return fn(handle, size, prop, flags); },
      [&] { return Held{handle ? as_u64(*handle) : 0, size}; });
}

GM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  return wrap_free<Drv, decltype(&cuMemRelease)>(HookId::cuMemRelease, MemoryType::kPhysical, handle, 0);
}

GM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                            unsigned long long flags) {
  return wrap_mapping<Drv, decltype(&cuMemMap)>(HookId::cuMemMap, true, as_u64(handle), ptr, size, offset, handle,
                                                flags);
}

GM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return wrap_mapping<Drv, decltype(&cuMemUnmap)>(HookId::cuMemUnmap, false, 0, ptr, size);
}

// --- Primary contexts: a reset or the last release frees every allocation
// of the context. numba.cuda.close() releases, then resets (Device.reset in
// numba/cuda/cudadrv/driver.py); driver-API libraries commonly retain the
// context when they open a device and release it in its destructor. The v1
// and _v2 ABIs take the same argument.

GM_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return wrap_device_reset<Drv, decltype(&cuDevicePrimaryCtxReset_v2)>(HookId::cuDevicePrimaryCtxReset_v2, int(dev),
                                                                       context_destroyed_by_reset, dev);
}

GM_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return wrap_device_reset<Drv, decltype(&cuDevicePrimaryCtxReset)>(HookId::cuDevicePrimaryCtxReset, int(dev),
                                                                    context_destroyed_by_reset, dev);
}

GM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return wrap_device_reset<Drv, decltype(&cuDevicePrimaryCtxRelease_v2)>(HookId::cuDevicePrimaryCtxRelease_v2,
                                                                         int(dev), primary_context_inactive, dev);
}

GM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return wrap_device_reset<Drv, decltype(&cuDevicePrimaryCtxRelease)>(HookId::cuDevicePrimaryCtxRelease, int(dev),
                                                                      primary_context_inactive, dev);
}

// --- A created context: what was allocated in it goes with it.

GM_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  return wrap_context_destroy<decltype(&cuCtxDestroy_v2)>(HookId::cuCtxDestroy_v2, ctx);
}

GM_EXPORT CUresult cuCtxDestroy(CUcontext ctx) {
  return wrap_context_destroy<decltype(&cuCtxDestroy)>(HookId::cuCtxDestroy, ctx);
}

// Destroys the context only when it drops the last use (cuCtxAttach counts
// uses); the driver is asked about each address either way, so a detach
// that destroyed nothing releases nothing. Deprecated in cuda.h, and still
// PyCUDA's Context.detach (src/cpp/cuda.hpp, context::detach_internal).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
GM_EXPORT CUresult cuCtxDetach(CUcontext ctx) {
  return wrap_context_destroy<decltype(&cuCtxDetach)>(HookId::cuCtxDetach, ctx);
}
#pragma GCC diagnostic pop

// --- Entry-point look-up: hand out our wrapper for exactly the ABIs we wrap.

GM_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult* symbolStatus) {
  auto fn = real<decltype(&cuGetProcAddress_v2)>(HookId::cuGetProcAddress_v2);
  if (!fn) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = fn(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (rc == CUDA_SUCCESS && pfn && *pfn) *pfn = swap_driver_proc(symbol, *pfn, cudaVersion, uint64_t(flags));
  return rc;
}

GM_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  auto fn = real<decltype(&cuGetProcAddress)>(HookId::cuGetProcAddress);
  if (!fn) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = fn(symbol, pfn, cudaVersion, flags);
  if (rc == CUDA_SUCCESS && pfn && *pfn) *pfn = swap_driver_proc(symbol, *pfn, cudaVersion, uint64_t(flags));
  return rc;
}

namespace gpumemrec {
// cuCtxDetach's address: deprecated in cuda.h, hooked all the same (above).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void* const kCudaWrappers[kCudaHookCount] = {GPUMEMREC_HOOKS_CUDA(GPUMEMREC_WRAPPER_ADDRESS)};
#pragma GCC diagnostic pop
}  // namespace gpumemrec
