// CUDA driver wrappers (libcuda.so.1), including the entry-point look-up
// (cuGetProcAddress) that NVIDIA's static runtime, CuPy and PyTorch use.
//
// hook_helpers.h comes before cuda.h: cuda.h #defines cuGetProcAddress as
// cuGetProcAddress_v2, which would rename our HookId enumerators.
#include "shim/hooks/wrap.h"
#include "shim/hooks/proc_address.h"

#include <cuda.h>

// cuda.h maps cuGetProcAddress to cuGetProcAddress_v2; we export both ABIs.
#undef cuGetProcAddress

using namespace gpumemrec;

extern "C" {
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
}

namespace {

std::atomic<void*> g_ctx_get_device{nullptr};

int current_device() {
  auto fn = helper<CUresult (*)(CUdevice*)>(g_ctx_get_device, Library::CUDA, "cuCtxGetDevice");
  CUdevice d = 0;
  if (!fn || fn(&d) != CUDA_SUCCESS) return kUnknownDevice;
  return int(d);
}

inline uint64_t u64(const void* p) { return reinterpret_cast<uint64_t>(p); }

CUresult refuse_like_driver() { return CUDA_ERROR_OUT_OF_MEMORY; }

template <typename Fn, typename... Args>
CUresult alloc_common(HookId id, MemoryType type, uint64_t size, uint64_t stream, CUdeviceptr* out, Args... args) {
  auto fn = real<Fn>(id);
  if (!fn) return CUDA_ERROR_NOT_INITIALIZED;
  HookScope scope;
  if (!scope.record()) return fn(out, args...);
  return run_alloc<CUresult>(
      id, type, current_device(), size, stream, [&] { return fn(out, args...); },
      [&] { return Held{out ? uint64_t(*out) : 0, size}; }, refuse_like_driver);
}

template <typename Fn, typename... Args>
CUresult free_common(HookId id, CUdeviceptr ptr, uint64_t stream, Args... args) {
  auto fn = real<Fn>(id);
  if (!fn) return CUDA_ERROR_NOT_INITIALIZED;
  HookScope scope;
  if (!scope.record()) return fn(ptr, args...);
  return run_free<CUresult>(id, MemoryType::kDevice, uint64_t(ptr), stream, [&] { return fn(ptr, args...); });
}

}  // namespace

GM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return alloc_common<decltype(&cuMemAlloc_v2)>(HookId::cuMemAlloc_v2, MemoryType::kDevice, bytesize, 0, dptr,
                                                bytesize);
}

GM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                                      unsigned int ElementSizeBytes) {
  auto fn = real<decltype(&cuMemAllocPitch_v2)>(HookId::cuMemAllocPitch_v2);
  if (!fn) return CUDA_ERROR_NOT_INITIALIZED;
  HookScope scope;
  if (!scope.record()) return fn(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
  const uint64_t asked = uint64_t(WidthInBytes) * Height;
  return run_alloc<CUresult>(
      HookId::cuMemAllocPitch_v2, MemoryType::kDevice, current_device(), asked, 0,
      [&] { return fn(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes); },
      [&] { return Held{dptr ? uint64_t(*dptr) : 0, pPitch ? uint64_t(*pPitch) * Height : asked}; },
      refuse_like_driver);
}

GM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  return alloc_common<decltype(&cuMemAllocManaged)>(HookId::cuMemAllocManaged, MemoryType::kManaged, bytesize, 0,
                                                    dptr, bytesize, flags);
}

GM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return alloc_common<decltype(&cuMemAllocAsync)>(HookId::cuMemAllocAsync, MemoryType::kDevice, bytesize,
                                                  u64(hStream), dptr, bytesize, hStream);
}

GM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return alloc_common<decltype(&cuMemAllocAsync_ptsz)>(HookId::cuMemAllocAsync_ptsz, MemoryType::kDevice, bytesize,
                                                       u64(hStream), dptr, bytesize, hStream);
}

GM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  return alloc_common<decltype(&cuMemAllocFromPoolAsync)>(HookId::cuMemAllocFromPoolAsync, MemoryType::kDevice,
                                                          bytesize, u64(hStream), dptr, bytesize, pool, hStream);
}

GM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                CUstream hStream) {
  return alloc_common<decltype(&cuMemAllocFromPoolAsync_ptsz)>(
      HookId::cuMemAllocFromPoolAsync_ptsz, MemoryType::kDevice, bytesize, u64(hStream), dptr, bytesize, pool, hStream);
}

GM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return free_common<decltype(&cuMemFree_v2)>(HookId::cuMemFree_v2, dptr, 0);
}

GM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return free_common<decltype(&cuMemFreeAsync)>(HookId::cuMemFreeAsync, dptr, u64(hStream), hStream);
}

GM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return free_common<decltype(&cuMemFreeAsync_ptsz)>(HookId::cuMemFreeAsync_ptsz, dptr, u64(hStream), hStream);
}

// --- Virtual memory management: physical memory lives with the handle.

GM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                               unsigned long long flags) {
  auto fn = real<decltype(&cuMemCreate)>(HookId::cuMemCreate);
  if (!fn) return CUDA_ERROR_NOT_INITIALIZED;
  HookScope scope;
  if (!scope.record()) return fn(handle, size, prop, flags);
  int device = prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : current_device();
  return run_alloc<CUresult>(
      HookId::cuMemCreate, MemoryType::kPhysical, device, size, 0, [&] { return fn(handle, size, prop, flags); },
      [&] { return Held{handle ? uint64_t(*handle) : 0, size}; }, refuse_like_driver);
}

GM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  auto fn = real<decltype(&cuMemRelease)>(HookId::cuMemRelease);
  if (!fn) return CUDA_ERROR_NOT_INITIALIZED;
  HookScope scope;
  if (!scope.record()) return fn(handle);
  return run_free<CUresult>(HookId::cuMemRelease, MemoryType::kPhysical, uint64_t(handle), 0,
                            [&] { return fn(handle); });
}

GM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                            unsigned long long flags) {
  auto fn = real<decltype(&cuMemMap)>(HookId::cuMemMap);
  if (!fn) return CUDA_ERROR_NOT_INITIALIZED;
  HookScope scope;
  if (!scope.record()) return fn(ptr, size, offset, handle, flags);
  return run_mapping<CUresult>(HookId::cuMemMap, true, device_of_handle(uint64_t(handle)), uint64_t(ptr), size,
                               [&] { return fn(ptr, size, offset, handle, flags); });
}

GM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  auto fn = real<decltype(&cuMemUnmap)>(HookId::cuMemUnmap);
  if (!fn) return CUDA_ERROR_NOT_INITIALIZED;
  HookScope scope;
  if (!scope.record()) return fn(ptr, size);
  return run_mapping<CUresult>(HookId::cuMemUnmap, false, kUnknownDevice, uint64_t(ptr), size,
                               [&] { return fn(ptr, size); });
}

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
