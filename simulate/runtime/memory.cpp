// Device, managed and pinned host memory: cudaMalloc and its family (each a
// call through the driver's functions), cudaFree, cudaHostAlloc and
// cudaHostRegister (real host memory: pinned memory is what a host program
// reads and writes), cudaMemGetInfo, cudaPointerGetAttributes.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

#include "core/ledger.h"
#include "runtime/internal.h"
#include "runtime/kept_bytes.h"

namespace rt {
namespace {

// Pinned host ranges: start -> {length, allocated here (cudaHostAlloc) or registered}.
struct Pinned {
  size_t len;
  bool owned;
};
std::mutex g_host_mu;
std::map<uintptr_t, Pinned>* g_host = new std::map<uintptr_t, Pinned>();  // never destroyed

cudaError_t finish_alloc(CUresult r, CUdeviceptr p, void** out) {
  *out = r == CUDA_SUCCESS ? reinterpret_cast<void*>(static_cast<uintptr_t>(p)) : nullptr;
  return record(map_drv(r));
}

cudaError_t host_alloc(void** ptr, size_t size) {
  if (ptr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  void* p = nullptr;
  if (posix_memalign(&p, 4096, size) != 0) {
    *ptr = nullptr;
    return record(cudaErrorMemoryAllocation);
  }
  {
    std::lock_guard<std::mutex> lock(g_host_mu);
    (*g_host)[reinterpret_cast<uintptr_t>(p)] = Pinned{size, true};
  }
  *ptr = p;
  return cudaSuccess;
}

// The pinned range holding p, if any (under g_host_mu).
std::map<uintptr_t, Pinned>::iterator pinned_range(uintptr_t p) {
  auto it = g_host->upper_bound(p);
  if (it == g_host->begin()) return g_host->end();
  --it;
  return p < it->first + (it->second.len == 0 ? 1 : it->second.len) ? it : g_host->end();
}

// What small copies kept in an allocation goes with it (kept_bytes.h): the
// range, asked of the driver before the free, reads as zeros.
void forget_kept(void* p) {
  size_t size = 0;
  if (kept::empty() || g_drv.cuPointerGetAttribute == nullptr) return;
  if (g_drv.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, reinterpret_cast<uintptr_t>(p)) ==
      CUDA_SUCCESS)
    kept::forget(reinterpret_cast<uintptr_t>(p), size);
}

}  // namespace

bool is_pinned(const void* p) {
  std::lock_guard<std::mutex> lock(g_host_mu);
  return pinned_range(reinterpret_cast<uintptr_t>(p)) != g_host->end();
}

Where where(const void* p) {
  if (sim::is_device_address(reinterpret_cast<uintptr_t>(p))) return Where::Device;
  return is_pinned(p) ? Where::PinnedHost : Where::Host;
}

}  // namespace rt

using rt::ensure_ctx;
using rt::ensure_init;
using rt::g_drv;
using rt::map_drv;
using rt::record;

SIM_EXPORT cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  const CUresult r = g_drv.cuMemAlloc(&p, size);
  return rt::finish_alloc(r, p, devPtr);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaFree(void* devPtr) {
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (devPtr == nullptr) return cudaSuccess;
  rt::forget_kept(devPtr);
  return record(map_drv(g_drv.cuMemFree(reinterpret_cast<uintptr_t>(devPtr))));
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemAllocAsync == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  const CUresult r = g_drv.cuMemAllocAsync(&p, size, hStream);
  return rt::finish_alloc(r, p, devPtr);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemFreeAsync == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  if (devPtr == nullptr) return cudaSuccess;
  rt::forget_kept(devPtr);
  return record(map_drv(g_drv.cuMemFreeAsync(reinterpret_cast<uintptr_t>(devPtr), hStream)));
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                                         cudaStream_t stream) {
  if (ptr == nullptr || memPool == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemAllocFromPoolAsync == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  const CUresult r = g_drv.cuMemAllocFromPoolAsync(&p, size, memPool, stream);
  return rt::finish_alloc(r, p, ptr);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemAllocManaged == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  const CUresult r = g_drv.cuMemAllocManaged(&p, size, flags);
  return rt::finish_alloc(r, p, devPtr);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  if (devPtr == nullptr || pitch == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemAllocPitch == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  if (width == 0 || height == 0) {
    *devPtr = nullptr;
    *pitch = 0;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  size_t pt = 0;
  const CUresult r = g_drv.cuMemAllocPitch(&p, &pt, width, height, 4);
  if (r == CUDA_SUCCESS) *pitch = pt;
  return rt::finish_alloc(r, p, devPtr);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr, struct cudaExtent extent) {
  if (pitchedDevPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemAllocPitch == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  pitchedDevPtr->xsize = extent.width;
  pitchedDevPtr->ysize = extent.height;
  if (extent.width == 0 || extent.height == 0 || extent.depth == 0) {
    pitchedDevPtr->ptr = nullptr;
    pitchedDevPtr->pitch = 0;
    return cudaSuccess;
  }
  if (extent.height > SIZE_MAX / extent.depth) return record(cudaErrorMemoryAllocation);
  CUdeviceptr p = 0;
  size_t pt = 0;
  const CUresult r = g_drv.cuMemAllocPitch(&p, &pt, extent.width, extent.height * extent.depth, 4);
  pitchedDevPtr->pitch = r == CUDA_SUCCESS ? pt : 0;
  return rt::finish_alloc(r, p, &pitchedDevPtr->ptr);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size) { return rt::host_alloc(ptr, size); }

SIM_EXPORT cudaError_t CUDARTAPI cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  return rt::host_alloc(pHost, size);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaFreeHost(void* ptr) {
  if (cudaError_t e = ensure_init()) return record(e);
  if (ptr == nullptr) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(rt::g_host_mu);
    auto it = rt::g_host->find(reinterpret_cast<uintptr_t>(ptr));
    if (it == rt::g_host->end() || !it->second.owned) return record(cudaErrorInvalidValue);
    rt::g_host->erase(it);
  }
  free(ptr);
  return cudaSuccess;
}

// Registered host memory stays the program's; it only becomes "pinned"
// (cudaPointerGetAttributes says cudaMemoryTypeHost).
SIM_EXPORT cudaError_t CUDARTAPI cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  if (ptr == nullptr || size == 0) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  std::lock_guard<std::mutex> lock(rt::g_host_mu);
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  auto next = rt::g_host->lower_bound(p);
  if (rt::pinned_range(p) != rt::g_host->end() || (next != rt::g_host->end() && next->first < p + size))
    return record(cudaErrorHostMemoryAlreadyRegistered);
  (*rt::g_host)[p] = rt::Pinned{size, false};
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaHostUnregister(void* ptr) {
  if (cudaError_t e = ensure_init()) return record(e);
  std::lock_guard<std::mutex> lock(rt::g_host_mu);
  auto it = rt::g_host->find(reinterpret_cast<uintptr_t>(ptr));
  if (it == rt::g_host->end() || it->second.owned) return record(cudaErrorHostMemoryNotRegistered);
  rt::g_host->erase(it);
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  if (pDevice == nullptr || flags != 0 || !rt::is_pinned(pHost)) return record(cudaErrorInvalidValue);
  *pDevice = pHost;  // mapped pinned memory: the same address on a unified-addressing system
  return cudaSuccess;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  return record(map_drv(g_drv.cuMemGetInfo(free, total)));
}

// Device memory: its device; pinned host memory: cudaMemoryTypeHost; any other
// host address: cudaMemoryTypeUnregistered with success (CUDA >= 11).
SIM_EXPORT cudaError_t CUDARTAPI cudaPointerGetAttributes(struct cudaPointerAttributes* attributes,
                                                          const void* ptr) {
  if (attributes == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  memset(attributes, 0, sizeof *attributes);
  attributes->device = rt::current_device();
  switch (rt::where(ptr)) {
    case rt::Where::Device: {
      int ordinal = rt::current_device();
      CUmemorytype type = CU_MEMORYTYPE_DEVICE;
      const CUdeviceptr d = reinterpret_cast<uintptr_t>(ptr);
      if (g_drv.cuPointerGetAttribute != nullptr) {
        g_drv.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d);
        g_drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d);
      }
      attributes->type = type == CU_MEMORYTYPE_UNIFIED ? cudaMemoryTypeManaged : cudaMemoryTypeDevice;
      attributes->device = ordinal;
      attributes->devicePointer = const_cast<void*>(ptr);
      if (attributes->type == cudaMemoryTypeManaged) attributes->hostPointer = const_cast<void*>(ptr);
      break;
    }
    case rt::Where::PinnedHost:
      attributes->type = cudaMemoryTypeHost;
      attributes->devicePointer = const_cast<void*>(ptr);
      attributes->hostPointer = const_cast<void*>(ptr);
      break;
    case rt::Where::Host:
      attributes->type = cudaMemoryTypeUnregistered;
      attributes->hostPointer = const_cast<void*>(ptr);
      break;
  }
  return cudaSuccess;
}
