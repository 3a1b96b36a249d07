// NCCL's device memory, taken as NCCL takes it: with cuMem (include/alloc.h
// ncclCuMemAlloc: cuMemCreate of the size rounded up to the driver's minimum
// granularity, cuMemAddressReserve, cuMemMap, cuMemSetAccess), or with
// NCCL_CUMEM_ENABLE=0 its static runtime's cudaMalloc (cuMemAlloc_v2). Every
// call goes through the driver's entry points (core/driver_entry.h).
#pragma once

#include <cstdint>

namespace sim::nccl {

struct DeviceBuffer {
  uint64_t ptr = 0;
  uint64_t size = 0;    // what the device holds (rounded to the granularity with cuMem)
  uint64_t handle = 0;  // cuMem's physical handle; 0 for cuMemAlloc
};

enum class AllocResult { kOk, kOutOfMemory, kNoDriver, kFailed };

// `bytes` on `device`. kOutOfMemory when the driver says so (NCCL then
// returns ncclUnhandledCudaError, "Failed to CUDA calloc").
AllocResult alloc_buffer(int device, uint64_t bytes, bool cumem, DeviceBuffer* out);
void free_buffer(const DeviceBuffer& b);

// The device of the calling thread's current context (what NCCL's
// cudaGetDevice reads), or false.
bool current_device(int* device);

// Makes `device`'s primary context current on the calling thread, as NCCL's
// threads do with cudaSetDevice(comm->cudaDev) (its proxy thread, its
// nonblocking init thread).
bool bind_device(int device);

// The driver's minimum VMM granularity for `device` (2 MiB on every NVIDIA
// GPU), or 0 without a driver.
uint64_t granularity(int device);

}  // namespace sim::nccl
