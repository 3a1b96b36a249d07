// Classic device memory: cuMemAlloc and its family, cuMemFree, cuMemGetInfo,
// pointer attributes and address ranges, fills.
#include <cstdint>

#include "driver/internal.h"

namespace drv {

CUresult map_core(int rc, CUresult bad_device) {
  switch (rc) {
    case sim::kOk: return CUDA_SUCCESS;
    case sim::kInvalid: return CUDA_ERROR_INVALID_VALUE;
    case sim::kOom: return CUDA_ERROR_OUT_OF_MEMORY;
    case sim::kBadDevice: return bad_device;
  }
  return CUDA_ERROR_UNKNOWN;
}

// Every device allocation entry point ends up here.
CUresult do_alloc(CUdeviceptr* dptr, size_t size, int device, Kind kind, bool pooled) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (size == 0) {
    *dptr = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint64_t addr = 0;
  const int rc = pooled ? sim::alloc_from_pool(device, size, &addr) : sim::alloc(device, size, kind, 0, false, &addr);
  *dptr = rc == sim::kOk ? static_cast<CUdeviceptr>(addr) : 0;
  if (rc == sim::kOk) {
    if (t_created < 0) mark_active(device);
    note_owner(addr);
  }
  return map_core(rc);
}

CUresult do_free(CUdeviceptr p) {
  if (p == 0) return CUDA_SUCCESS;
  const int rc = sim::free_ptr(p);
  if (rc == sim::kOk) forget_owner(p);
  return map_core(rc);
}

CUresult do_alloc_pitch(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height, unsigned int elem) {
  if (dptr == nullptr || pitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16)) {
    *dptr = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  const size_t p = (width + 511) / 512 * 512;
  if (p < width || height > SIZE_MAX / p) {
    *dptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const CUresult rc = do_alloc(dptr, p * height, t_device, Kind::Device);
  if (rc == CUDA_SUCCESS) *pitch = p;
  return rc;
}

}  // namespace drv

using namespace drv;

FAKE_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(t_device)) return CUDA_ERROR_INVALID_CONTEXT;
  const uint64_t cap = sim::config().capacity;
  const uint64_t used = sim::occupied_bytes(t_device);
  *total = cap;
  *free = used >= cap ? 0 : cap - used;
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Classic device memory
// ---------------------------------------------------------------------------

// Legacy ABI (CUDA < 3.2): 32-bit device pointer, 32-bit size.
FAKE_EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dptr = 0;
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t addr = 0;
  const int rc = sim::alloc(t_device, bytesize, Kind::Device, 0, true, &addr);
  if (rc == sim::kOk) *dptr = static_cast<CUdeviceptr_v1>(addr);
  if (rc == sim::kOk) mark_active(t_device);
  return map_core(rc);
}

FAKE_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr_v1 dptr) { return do_free(dptr); }

FAKE_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return do_alloc(dptr, bytesize, t_device, Kind::Device);
}

FAKE_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                                                size_t Height, unsigned int ElementSizeBytes) {
  return do_alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}

FAKE_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
    *dptr = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  return do_alloc(dptr, bytesize, t_device, Kind::Managed);
}

FAKE_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) { return do_free(dptr); }

// Pointer attributes of any address inside an allocation or a mapping
// (PyTorch asks with a tensor's data pointer, not the allocation's start).
// An address that is no allocation's: CUDA_ERROR_INVALID_VALUE, as the
// driver answers for memory it does not know.
FAKE_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  sim::Found f{};
  if (!sim::find(ptr, &f)) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = context_handle(owner_of(f.start), f.device);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = f.kind == Kind::Managed ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = ptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = f.device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = f.start;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = f.size;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned int*>(data) = f.kind == Kind::Managed ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<unsigned int*>(data) = 1;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = f.start;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

// The allocation (or mapping) holding dptr: its start and size.
FAKE_EXPORT CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  sim::Found f{};
  if (!sim::find(dptr, &f)) return CUDA_ERROR_NOT_FOUND;
  if (pbase != nullptr) *pbase = f.start;
  if (psize != nullptr) *psize = f.size;
  return CUDA_SUCCESS;
}

// Fills of device memory: nothing to write (docs/simulate.md); the range
// must be device memory the driver knows.
namespace {
CUresult fill(CUdeviceptr dst, size_t count) {
  if (count == 0) return CUDA_SUCCESS;
  sim::Found f{};
  return sim::find(dst, &f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
}  // namespace

FAKE_EXPORT CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return fill(dstDevice, N * 4);
}
FAKE_EXPORT CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                                   CUstream hStream) {
  return fill(dstDevice, N * 4);
}
FAKE_EXPORT CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return fill(dstDevice, N);
}
FAKE_EXPORT CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return fill(dstDevice, N * 4);
}

// A stream memory operation: the value would be written when the stream
// reaches it; device memory is not kept, so nothing is.
FAKE_EXPORT CUresult CUDAAPI cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                                     unsigned int flags) {
  return fill(addr, 4);
}
FAKE_EXPORT CUresult CUDAAPI cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                                          unsigned int flags) {
  return fill(addr, 4);
}
FAKE_EXPORT CUresult CUDAAPI cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                                  unsigned int flags) {
  return fill(addr, 4);
}
