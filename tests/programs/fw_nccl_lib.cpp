// libnccl_fake.so.2: a communication library that takes its buffers with the
// CUDA driver's virtual memory calls, in the shape of NCCL's ncclMemAlloc /
// ncclCuMemAlloc (NVIDIA/nccl src/allocator.cc and src/include/alloc.h):
// the allocation granularity of the current device, cuMemCreate of the size
// rounded up to it, cuMemAddressReserve, cuMemMap, cuMemSetAccess for
// read-write. Its name matches the `libnccl*` row of the site rules
// (common/site_rules.cpp), as libnccl.so.2 does.
#include <cuda.h>

#include <cstddef>

namespace {

__attribute__((noinline)) CUresult ncclCuMemAlloc(void** ptr, CUmemGenericAllocationHandle* handlep, size_t size) {
  CUdevice dev = 0;
  CUresult rc = cuCtxGetDevice(&dev);
  if (rc != CUDA_SUCCESS) return rc;
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  size_t gran = 0;
  rc = cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (rc != CUDA_SUCCESS || gran == 0) return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_INVALID_VALUE;
  size = (size + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle handle = 0;
  if ((rc = cuMemCreate(&handle, size, &prop, 0)) != CUDA_SUCCESS) return rc;
  CUdeviceptr va = 0;
  if ((rc = cuMemAddressReserve(&va, size, gran, 0, 0)) != CUDA_SUCCESS) return rc;
  if ((rc = cuMemMap(va, size, 0, handle, 0)) != CUDA_SUCCESS) return rc;
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if ((rc = cuMemSetAccess(va, size, &access, 1)) != CUDA_SUCCESS) return rc;
  *handlep = handle;
  *ptr = reinterpret_cast<void*>(va);
  return CUDA_SUCCESS;
}

}  // namespace

// ncclMemAlloc: ncclSuccess (0) or ncclUnhandledCudaError (1).
extern "C" __attribute__((visibility("default"))) int ncclMemAlloc(void** ptr, size_t size) {
  CUmemGenericAllocationHandle handle = 0;
  return ncclCuMemAlloc(ptr, &handle, size) == CUDA_SUCCESS ? 0 : 1;
}
