#include "nccl/device_memory.h"

#include <mutex>

#include "core/driver_entry.h"

namespace sim::nccl {
namespace {

struct Calls {
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*mem_create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long) = nullptr;
  CUresult (*mem_release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*address_reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*address_free)(CUdeviceptr, size_t) = nullptr;
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
  CUresult (*unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  CUresult (*granularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*primary_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
};

// The versions are those NCCL's cudawrap.cc asks for (the CUDA 11.3+ ABIs).
bool link(Calls* c) {
  return driver_entry("cuCtxGetDevice", 2000, &c->ctx_get_device) &&
         driver_entry("cuMemCreate", 10020, &c->mem_create) && driver_entry("cuMemRelease", 10020, &c->mem_release) &&
         driver_entry("cuMemAddressReserve", 10020, &c->address_reserve) &&
         driver_entry("cuMemAddressFree", 10020, &c->address_free) && driver_entry("cuMemMap", 10020, &c->map) &&
         driver_entry("cuMemUnmap", 10020, &c->unmap) && driver_entry("cuMemSetAccess", 10020, &c->set_access) &&
         driver_entry("cuMemGetAllocationGranularity", 10020, &c->granularity) &&
         driver_entry("cuMemAlloc", 3020, &c->mem_alloc) && driver_entry("cuMemFree", 3020, &c->mem_free) &&
         driver_entry("cuDevicePrimaryCtxRetain", 7000, &c->primary_retain) &&
         driver_entry("cuCtxSetCurrent", 4000, &c->ctx_set_current);
}

const Calls* calls() {
  static Calls c;
  static bool ok = false;
  static std::once_flag once;
  std::call_once(once, [] { ok = link(&c); });
  return ok ? &c : nullptr;
}

CUmemAllocationProp device_prop(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;  // ncclCuMemHandleType
  return prop;
}

AllocResult failed(CUresult r) {
  return r == CUDA_ERROR_OUT_OF_MEMORY ? AllocResult::kOutOfMemory : AllocResult::kFailed;
}

AllocResult alloc_vmm(const Calls& c, int device, uint64_t bytes, DeviceBuffer* out) {
  const CUmemAllocationProp prop = device_prop(device);
  size_t gran = 0;
  CUresult r = c.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS || gran == 0) return AllocResult::kFailed;
  const uint64_t size = (bytes + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle handle = 0;
  if ((r = c.mem_create(&handle, size, &prop, 0)) != CUDA_SUCCESS) return failed(r);
  CUdeviceptr ptr = 0;
  if ((r = c.address_reserve(&ptr, size, gran, 0, 0)) != CUDA_SUCCESS) {
    c.mem_release(handle);
    return failed(r);
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if ((r = c.map(ptr, size, 0, handle, 0)) != CUDA_SUCCESS || (r = c.set_access(ptr, size, &access, 1)) != CUDA_SUCCESS) {
    c.unmap(ptr, size);
    c.address_free(ptr, size);
    c.mem_release(handle);
    return failed(r);
  }
  *out = DeviceBuffer{ptr, size, handle};
  return AllocResult::kOk;
}

}  // namespace

AllocResult alloc_buffer(int device, uint64_t bytes, bool cumem, DeviceBuffer* out) {
  const Calls* c = calls();
  if (c == nullptr) return AllocResult::kNoDriver;
  if (bytes == 0) bytes = 1;
  if (cumem) return alloc_vmm(*c, device, bytes, out);
  // NCCL_CUMEM_ENABLE=0: cudaMalloc on the current device (NCCL sets it).
  CUdeviceptr ptr = 0;
  const CUresult r = c->mem_alloc(&ptr, bytes);
  if (r != CUDA_SUCCESS) return failed(r);
  *out = DeviceBuffer{ptr, bytes, 0};
  return AllocResult::kOk;
}

// ncclCuMemFree's effect: unmap, release the physical memory, free the range.
void free_buffer(const DeviceBuffer& b) {
  const Calls* c = calls();
  if (c == nullptr || b.ptr == 0) return;
  if (b.handle == 0) {
    c->mem_free(b.ptr);
    return;
  }
  c->unmap(b.ptr, b.size);
  c->mem_release(b.handle);
  c->address_free(b.ptr, b.size);
}

bool current_device(int* device) {
  const Calls* c = calls();
  CUdevice d = 0;
  if (c == nullptr || c->ctx_get_device(&d) != CUDA_SUCCESS) return false;
  *device = static_cast<int>(d);
  return true;
}

bool bind_device(int device) {
  const Calls* c = calls();
  CUcontext ctx = nullptr;
  return c != nullptr && c->primary_retain(&ctx, device) == CUDA_SUCCESS && c->ctx_set_current(ctx) == CUDA_SUCCESS;
}

uint64_t granularity(int device) {
  const Calls* c = calls();
  if (c == nullptr) return 0;
  const CUmemAllocationProp prop = device_prop(device);
  size_t g = 0;
  return c->granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS ? g : 0;
}

}  // namespace sim::nccl
