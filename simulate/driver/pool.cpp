// The stream-ordered allocator: cuMemAllocAsync, cuMemFreeAsync, pools.
// A free's bytes stay with the pool (NVML counts them) until a
// synchronization releases them (core/ledger.h, free_to_pool).
#include <mutex>
#include <set>

#include "driver/internal.h"

namespace drv {
namespace {

struct FakePool {
  int device;
  bool is_default;
  bool destroyed;
};
FakePool g_default_pools[sim::kMaxDevices];

std::mutex g_pools_mu;
std::set<void*>* g_pools = new std::set<void*>();  // created (non-default) pools; never destroyed

FakePool* default_pool(int d) {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < sim::kMaxDevices; ++i) g_default_pools[i] = FakePool{i, true, false};
  });
  return &g_default_pools[d];
}

// Returns the pool if the handle is a live pool, else nullptr.
FakePool* pool_of(CUmemoryPool h) {
  if (h == nullptr) return nullptr;
  FakePool* p = reinterpret_cast<FakePool*>(h);
  if (p >= g_default_pools && p < g_default_pools + sim::kMaxDevices) {
    default_pool(0);
    return valid_dev(p->device) ? p : nullptr;
  }
  std::lock_guard<std::mutex> lock(g_pools_mu);
  if (g_pools->count(p) == 0 || p->destroyed) return nullptr;
  return p;
}

CUresult do_alloc_from_pool(CUdeviceptr* dptr, size_t size, CUmemoryPool pool) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  FakePool* p = pool_of(pool);
  if (p == nullptr) {
    *dptr = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  return do_alloc(dptr, size, p->device, Kind::Device, true);
}

CUresult do_alloc_async(CUdeviceptr* dptr, size_t size, int device) {
  return do_alloc(dptr, size, device, Kind::Device, true);
}

CUresult do_free_async(CUdeviceptr p) {
  if (p == 0) return CUDA_SUCCESS;
  return map_core(sim::free_to_pool(p));
}

}  // namespace

void pools_released_at_sync() { sim::pool_release_all(); }

}  // namespace drv

using namespace drv;

FAKE_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return do_alloc_async(dptr, bytesize, t_device);
}

FAKE_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return do_alloc_async(dptr, bytesize, t_device);
}

FAKE_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                     CUstream hStream) {
  return do_alloc_from_pool(dptr, bytesize, pool);
}

FAKE_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                          CUstream hStream) {
  return do_alloc_from_pool(dptr, bytesize, pool);
}

FAKE_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) { return do_free_async(dptr); }

FAKE_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) { return do_free_async(dptr); }

FAKE_EXPORT CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *pool_out = reinterpret_cast<CUmemoryPool>(default_pool(dev));
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  if (pool == nullptr || poolProps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(poolProps->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  FakePool* p = new FakePool{poolProps->location.id, false, false};
  {
    std::lock_guard<std::mutex> lock(g_pools_mu);
    g_pools->insert(p);
  }
  *pool = reinterpret_cast<CUmemoryPool>(p);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  FakePool* p = pool_of(pool);
  if (p == nullptr || p->is_default) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_pools_mu);
  p->destroyed = true;  // kept allocated: a stale handle must stay detectable
  return CUDA_SUCCESS;
}

// What PyTorch's cudaMallocAsync backend reads for its statistics and sets
// (CUDAMallocAsyncAllocator.cpp: the release threshold to UINT64_MAX, the
// reuse flags, the high marks reset).
FAKE_EXPORT CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  FakePool* p = pool_of(pool);
  if (p == nullptr || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const sim::PoolStats st = sim::pool_stats(p->device);
  auto u64 = [value](uint64_t v) { *static_cast<cuuint64_t*>(value) = v; };
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *static_cast<int*>(value) = 1; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: u64(st.threshold); return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: u64(st.reserved); return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: u64(st.reserved_high); return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: u64(st.used); return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: u64(st.used_high); return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

// The high marks may only be set to 0, which resets them to the current value.
FAKE_EXPORT CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  FakePool* p = pool_of(pool);
  if (p == nullptr || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const cuuint64_t v = *static_cast<cuuint64_t*>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: sim::pool_set(p->device, sim::PoolField::Threshold, v); return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      if (v != 0) return CUDA_ERROR_INVALID_VALUE;
      sim::pool_set(p->device, sim::PoolField::ReservedHigh, 0);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (v != 0) return CUDA_ERROR_INVALID_VALUE;
      sim::pool_set(p->device, sim::PoolField::UsedHigh, 0);
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

FAKE_EXPORT CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  FakePool* p = pool_of(pool);
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  sim::pool_trim(p->device, minBytesToKeep);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  if (pool_of(pool) == nullptr || (map == nullptr && count > 0)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
