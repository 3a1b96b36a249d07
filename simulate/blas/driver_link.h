// The CUDA driver as NVIDIA's cuBLAS libraries reach it: they link the CUDA
// runtime statically, which opens the driver itself at first use
// (dlopen("libcuda.so.1"), then cuGetProcAddress_v2 for every entry point;
// simulate/README.md, libcudart.so.13). Device memory the simulated cuBLAS
// takes is a call through these pointers, so the recorder (which hooks
// cuGetProcAddress) sees it and names libcublas's code as the caller.
#pragma once

#include <cuda.h>

namespace sim::blas {

struct DriverCalls {
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*mem_alloc_async)(CUdeviceptr*, size_t, CUstream) = nullptr;
  CUresult (*mem_free_async)(CUdeviceptr, CUstream) = nullptr;
};

// The driver's entry points, looked up once and cuInit(0) called; nullptr
// when there is no usable driver (no libcuda.so.1, a missing entry point, or
// cuInit failed): the library then says CUBLAS_STATUS_NOT_INITIALIZED, as
// NVIDIA's does when "the CUDA Runtime initialization failed" (cublasCreate).
const DriverCalls* driver();

}  // namespace sim::blas
