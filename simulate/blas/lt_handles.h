// cuBLASLt handles (libcublasLt.so.13).
//
// A cuBLAS handle is one of these, cast: NVIDIA documents that "any valid
// cublasHandle_t can be used in place of cublasLtHandle_t with a simple cast"
// (cuBLAS documentation, cublasLtHandle_t) and PyTorch relies on it
// (aten/src/ATen/cuda/CublasHandlePool.cpp, getCurrentCUDABlasLtHandle:
// reinterpret_cast<cublasLtHandle_t>(getCurrentCUDABlasHandle())). So
// libcublas makes its handles with cublasLtCreate and hands out the same
// pointer (cublas_context.h).
#pragma once

#include "blas/types.h"

namespace sim::blas::lt {

// True if `h` is a live handle of this library (made by cublasLtCreate, and
// not destroyed since).
bool live(cublasLtHandle_t h);

}  // namespace sim::blas::lt
