// Virtual memory management: physical handles (cuMemCreate), address
// reservations, mappings, access, granularity.
#include "driver/internal.h"

using namespace drv;

FAKE_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                         const CUmemAllocationProp* prop, unsigned long long flags) {
  if (handle == nullptr || prop == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t h = 0;
  const int rc = sim::create_physical(prop->location.id, size, &h);
  if (rc == sim::kOk) *handle = h;
  if (rc == sim::kOk) mark_active(prop->location.id);
  return map_core(rc, CUDA_ERROR_INVALID_DEVICE);
}

FAKE_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  return map_core(sim::release_physical(handle));
}

FAKE_EXPORT CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                                 unsigned long long flags) {
  if (ptr == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t out = 0;
  const int rc = sim::reserve_va(size, alignment, addr, &out);
  if (rc == sim::kOk) *ptr = out;
  return map_core(rc);
}

FAKE_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  return map_core(sim::free_va(ptr, size));
}

FAKE_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                      unsigned long long flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return map_core(sim::map(ptr, size, offset, handle));
}

FAKE_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) { return map_core(sim::unmap(ptr, size)); }

FAKE_EXPORT CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(desc[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
  }
  return map_core(sim::check_mapped(ptr, size));
}

FAKE_EXPORT CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                           CUmemAllocationGranularity_flags option) {
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *granularity = sim::kGranularity;
  return CUDA_SUCCESS;
}

// The physical handle mapped at addr; the caller must release it (a
// reference in the real driver; handles here are not reference-counted).
FAKE_EXPORT CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  sim::Found f{};
  if (!sim::find(reinterpret_cast<uintptr_t>(addr), &f) || f.kind != Kind::Physical) return CUDA_ERROR_INVALID_VALUE;
  *handle = f.handle;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                                    CUmemGenericAllocationHandle handle) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const int device = sim::physical_device(handle);
  if (device < 0) return CUDA_ERROR_INVALID_VALUE;
  *prop = CUmemAllocationProp{};
  prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop->location.id = device;
  return CUDA_SUCCESS;
}
