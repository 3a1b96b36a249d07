// Shared by the self-tests of the simulated cuBLAS and cuBLASLt
// (selftest_cublas*.cpp): the functions they call, as NVIDIA's headers
// declare them (checked against those headers by simulate.cublas_headers),
// and probes of the simulated driver's ledger.
#pragma once

#include <cstddef>
#include <cstdint>

#include "blas/types.h"  // simulate/blas: NVIDIA's types, or NVIDIA's headers

#if !defined(SIM_BLAS_REAL_HEADERS)
extern "C" {
cublasStatus_t cublasCreate_v2(cublasHandle_t*);
cublasStatus_t cublasDestroy_v2(cublasHandle_t);
cublasStatus_t cublasGetVersion_v2(cublasHandle_t, int*);
cublasStatus_t cublasGetProperty(libraryPropertyType, int*);
const char* cublasGetStatusName(cublasStatus_t);
const char* cublasGetStatusString(cublasStatus_t);
size_t cublasGetCudartVersion(void);
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t);
cublasStatus_t cublasGetStream_v2(cublasHandle_t, cudaStream_t*);
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t, void*, size_t);
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t, cublasPointerMode_t);
cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t, cublasPointerMode_t*);
cublasStatus_t cublasSetAtomicsMode(cublasHandle_t, cublasAtomicsMode_t);
cublasStatus_t cublasGetAtomicsMode(cublasHandle_t, cublasAtomicsMode_t*);
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t);
cublasStatus_t cublasGetMathMode(cublasHandle_t, cublasMath_t*);
cublasStatus_t cublasSetSmCountTarget(cublasHandle_t, int);
cublasStatus_t cublasGetSmCountTarget(cublasHandle_t, int*);
cublasStatus_t cublasSgemm_v2(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                              const float*, int, const float*, int, const float*, float*, int);
cublasStatus_t cublasZgemm_v2(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                              const cuDoubleComplex*, const cuDoubleComplex*, int, const cuDoubleComplex*, int,
                              const cuDoubleComplex*, cuDoubleComplex*, int);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const float*, const float*, int, long long int, const float*, int,
                                         long long int, const float*, float*, int, long long int, int);
cublasStatus_t cublasDgemmBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const double*,
                                  const double* const[], int, const double* const[], int, const double*,
                                  double* const[], int, int);
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                          const void*, const void*, cudaDataType, int, long long int, const void*,
                                          cudaDataType, int, long long int, const void*, void*, cudaDataType, int,
                                          long long int, int, cublasComputeType_t, cublasGemmAlgo_t);
cublasStatus_t cublasSgemmEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                             const void*, cudaDataType, int, const void*, cudaDataType, int, const float*, void*,
                             cudaDataType, int);
cublasStatus_t cublasDotEx(cublasHandle_t, int, const void*, cudaDataType, int, const void*, cudaDataType, int, void*,
                           cudaDataType, cudaDataType);
cublasStatus_t cublasSdot_v2(cublasHandle_t, int, const float*, int, const float*, int, float*);
cublasStatus_t cublasIsamax_v2(cublasHandle_t, int, const float*, int, int*);
cublasStatus_t cublasDznrm2_v2(cublasHandle_t, int, const cuDoubleComplex*, int, double*);
cublasStatus_t cublasSaxpy_v2(cublasHandle_t, int, const float*, const float*, int, float*, int);
cublasStatus_t cublasSgemv_v2(cublasHandle_t, cublasOperation_t, int, int, const float*, const float*, int,
                              const float*, int, const float*, float*, int);
cublasStatus_t cublasCherk_v2(cublasHandle_t, cublasFillMode_t, cublasOperation_t, int, int, const float*,
                              const cuComplex*, int, const float*, cuComplex*, int);
cublasStatus_t cublasStrsm_v2(cublasHandle_t, cublasSideMode_t, cublasFillMode_t, cublasOperation_t,
                              cublasDiagType_t, int, int, const float*, const float*, int, float*, int);
cublasStatus_t cublasDtrsmBatched(cublasHandle_t, cublasSideMode_t, cublasFillMode_t, cublasOperation_t,
                                  cublasDiagType_t, int, int, const double*, const double* const[], int,
                                  double* const[], int, int);
cublasStatus_t cublasSgetrfBatched(cublasHandle_t, int, float* const[], int, int*, int*, int);
cublasStatus_t cublasSgetrsBatched(cublasHandle_t, cublasOperation_t, int, int, const float* const[], int,
                                   const int*, float* const[], int, int*, int);
cublasStatus_t cublasSgelsBatched(cublasHandle_t, cublasOperation_t, int, int, int, float* const[], int,
                                  float* const[], int, int*, int*, int);
cublasStatus_t cublasGetVectorAsync(int, int, const void*, int, void*, int, cudaStream_t);
cublasStatus_t cublasSetMatrixAsync(int, int, int, const void*, int, void*, int, cudaStream_t);
cublasStatus_t cublasGetMatrixAsync(int, int, int, const void*, int, void*, int, cudaStream_t);

cublasStatus_t cublasLtCreate(cublasLtHandle_t*);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t);
size_t cublasLtGetVersion(void);
size_t cublasLtGetCudartVersion(void);
const char* cublasLtGetStatusName(cublasStatus_t);
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t*, cudaDataType, uint64_t, uint64_t, int64_t);
cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t, size_t, cudaDataType, uint64_t, uint64_t,
                                                 int64_t);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t);
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t,
                                                const void*, size_t);
cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void*,
                                                size_t, size_t*);
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t*, cublasComputeType_t, cudaDataType_t);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void*,
                                              size_t);
cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void*, size_t,
                                              size_t*);
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t*);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                                                    const void*, size_t);
cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                                                    void*, size_t, size_t*);
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t[],
                                              int*);
cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                              cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t, const void*, const void*,
                              cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*,
                              void*, size_t, cudaStream_t);
cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t, cublasComputeType_t, cudaDataType_t, cudaDataType_t,
                                      cudaDataType_t, cudaDataType_t, cudaDataType_t, int, cublasLtMatmulAlgo_t*);
cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                       cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                       const cublasLtMatmulAlgo_t*, cublasLtMatmulHeuristicResult_t*);
cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t*, cublasLtMatmulAlgoConfigAttributes_t,
                                                    const void*, size_t);
cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t*, cublasLtMatmulAlgoConfigAttributes_t,
                                                    void*, size_t, size_t*);
cublasStatus_t cublasLtMatmulAlgoGetIds(cublasLtHandle_t, cublasComputeType_t, cudaDataType_t, cudaDataType_t,
                                        cudaDataType_t, cudaDataType_t, cudaDataType_t, int, int[], int*);
}
#endif

// Each group of checks returns its number of failed checks.
int test_cublas_helpers();
int test_cublas_routines();
int test_cublas_workspace(uint64_t expected_pool_bytes);
int test_cublaslt();
int test_cublas_threads();

// The simulated driver (libcuda.so.1, beside the libraries).
struct DriverProbe {
  unsigned long long (*live_bytes)(int) = nullptr;     // fakegpu_cuda_live_bytes
  unsigned long long (*process_bytes)(int) = nullptr;  // fakegpu_cuda_process_bytes (pools included)
  int (*mem_alloc)(unsigned long long*, size_t) = nullptr;  // cuMemAlloc_v2
  int (*mem_free)(unsigned long long) = nullptr;            // cuMemFree_v2
  int (*mem_get_info)(size_t*, size_t*) = nullptr;          // cuMemGetInfo_v2
  int (*synchronize)() = nullptr;                           // cuCtxSynchronize
};
const DriverProbe& driver_probe();
