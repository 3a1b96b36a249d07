// The library simulated: nvidia-cublas 13.1.1.3, the wheel PyTorch 2.14.1
// installs (CUBLAS_VER_* of its cublas_api.h). The real library's
// cublasLtGetVersion() returns 130101 and cublasLtGetCudartVersion() 13000,
// the CUDA runtime it was built with (read with ctypes from the wheel's
// libcublasLt.so.13, which answers these without a GPU).
#pragma once

#include "blas/types.h"

namespace sim::blas {

constexpr int kVerMajor = 13;
constexpr int kVerMinor = 1;
constexpr int kVerPatch = 1;
constexpr int kVerBuild = 3;
constexpr int kVersion = kVerMajor * 10000 + kVerMinor * 100 + kVerPatch;  // CUBLAS_VERSION
constexpr int kCudartVersion = 13000;

// cublasGetProperty / cublasLtGetProperty: MAJOR_VERSION, MINOR_VERSION,
// PATCH_LEVEL; another type or a NULL value is CUBLAS_STATUS_INVALID_VALUE
// (cuBLAS documentation, cublasGetProperty; the wheel's library answers so).
cublasStatus_t library_property(libraryPropertyType type, int* value);

}  // namespace sim::blas
