// Stream-ordered memory pools (PyTorch's cudaMallocAsync backend): the
// runtime's calls go to the driver's pools (the driver keeps what a pool
// holds: simulate/driver/pool.cpp).
#include "runtime/internal.h"

using rt::ensure_ctx;
using rt::ensure_init;
using rt::g_drv;
using rt::map_drv;
using rt::record;

SIM_EXPORT cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  if (memPool == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  if (g_drv.cuDeviceGetDefaultMemPool == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  CUdevice dev = 0;
  CUresult r = g_drv.cuDeviceGet(&dev, device);
  if (r == CUDA_SUCCESS) r = g_drv.cuDeviceGetDefaultMemPool(memPool, dev);
  return record(r == CUDA_ERROR_INVALID_DEVICE ? cudaErrorInvalidDevice : map_drv(r));
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                                         void* value) {
  if (memPool == nullptr || value == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  if (g_drv.cuMemPoolGetAttribute == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  return record(map_drv(g_drv.cuMemPoolGetAttribute(memPool, static_cast<CUmemPool_attribute>(attr), value)));
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                                         void* value) {
  if (memPool == nullptr || value == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  if (g_drv.cuMemPoolSetAttribute == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  return record(map_drv(g_drv.cuMemPoolSetAttribute(memPool, static_cast<CUmemPool_attribute>(attr), value)));
}

SIM_EXPORT cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  if (memPool == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_ctx()) return record(e);
  if (g_drv.cuMemPoolTrimTo == nullptr) return record(cudaErrorCallRequiresNewerDriver);
  return record(map_drv(g_drv.cuMemPoolTrimTo(memPool, minBytesToKeep)));
}

// Access from peer devices: every simulated device may reach every other.
SIM_EXPORT cudaError_t CUDARTAPI cudaMemPoolSetAccess(cudaMemPool_t memPool, const struct cudaMemAccessDesc* descList,
                                                      size_t count) {
  if (memPool == nullptr || (descList == nullptr && count > 0)) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_init()) return record(e);
  return cudaSuccess;
}
