// The cuBLASLt functions libcublas calls (imported from libcublasLt.so.13,
// its DT_NEEDED, as NVIDIA's libcublas imports cublasLt*@libcublasLt.so.13).
#pragma once

#include "blas/types.h"

#if !defined(SIM_BLAS_REAL_HEADERS)
extern "C" {
cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle);
}
#endif
