// The driver entry points the simulated cuBLAS libraries use, reached as
// NVIDIA's reach the driver through their static CUDA runtime
// (core/driver_entry.h: dlopen("libcuda.so.1"), cuGetProcAddress_v2): so the
// recorder, which hooks cuGetProcAddress, sees cuBLAS's device memory and
// names libcublas's code as the caller.
#pragma once

#include <cuda.h>

namespace sim::blas {

struct DriverCalls {
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*mem_alloc_async)(CUdeviceptr*, size_t, CUstream) = nullptr;
  CUresult (*mem_free_async)(CUdeviceptr, CUstream) = nullptr;
};

// Looked up once (cuCtxGetDevice 2000, cuMemAllocAsync and cuMemFreeAsync
// 11020); nullptr when there is no usable driver (no libcuda.so.1, a missing
// entry point, cuInit failed): the library then says
// CUBLAS_STATUS_NOT_INITIALIZED, as NVIDIA's does when "the CUDA Runtime
// initialization failed" (cublasCreate).
const DriverCalls* driver();

}  // namespace sim::blas
