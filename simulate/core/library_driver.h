// The CUDA driver as NVIDIA's libraries with a static CUDA runtime reach it
// (cuDNN, cuBLAS, NCCL): at first use they dlopen("libcuda.so.1"), take
// cuGetProcAddress_v2 with dlsym and resolve every entry point through it
// (simulate/README.md, libcudart.so.13). A simulated library that takes device
// memory calls through these pointers, so the driver's ledger stays the one
// truth and the recorder (which hooks cuGetProcAddress) sees the call and names
// the library's code as its caller.
#pragma once

#include <cuda.h>

namespace sim {

struct LibraryDriver {
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;  // ("cuMemAlloc", 3020): cuMemAlloc_v2
  CUresult (*mem_free)(CUdeviceptr) = nullptr;            // ("cuMemFree", 3020): cuMemFree_v2
};

// The driver's entry points, looked up once and cuInit(0) called; nullptr
// when there is no usable driver (no libcuda.so.1, a missing entry point, or
// cuInit failed).
const LibraryDriver* library_driver();

}  // namespace sim
