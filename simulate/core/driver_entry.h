// The CUDA driver as a library that links NVIDIA's CUDA runtime statically
// reaches it (cuBLAS, cuDNN, NCCL): the static runtime opens the driver at
// first use, dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL), takes
// cuGetProcAddress_v2 with dlsym and every other entry point through it
// (simulate/README.md, libcudart.so.13). Device memory a simulated library
// takes is a call through these pointers, so the recorder (which hooks
// cuGetProcAddress) sees it and names the library's code as the caller.
#pragma once

#include <cuda.h>

namespace sim {

using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

// The driver's cuGetProcAddress (asked for at version 12000) after cuInit(0)
// succeeded, or nullptr when there is no usable driver. Looked up once.
GetProcAddressFn driver_proc_address();

// One entry point by base name at `version` (the ABI: "cuMemAlloc" at 3020 is
// cuMemAlloc_v2), or false with *out untouched.
template <typename F>
bool driver_entry(const char* name, int version, F* out) {
  GetProcAddressFn gpa = driver_proc_address();
  if (gpa == nullptr) return false;
  void* p = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (gpa(name, &p, version, 0, &st) != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || p == nullptr)
    return false;
  *out = reinterpret_cast<F>(p);
  return true;
}

}  // namespace sim
