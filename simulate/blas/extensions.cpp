// cuBLAS's mixed-type routines PyTorch imports (cuBLAS documentation,
// "BLAS-like Extension": cublasGemmEx, cublasGemmStridedBatchedEx,
// cublas<t>gemmEx, cublasDotEx): the GEMM family's checks (gemm_family.h),
// and the type combinations each documents; another combination is
// CUBLAS_STATUS_NOT_SUPPORTED, a compute type or algorithm that is none of
// the enum's CUBLAS_STATUS_INVALID_VALUE.
#include <cstring>

#include "blas/args.h"
#include "blas/cublas_context.h"
#include "blas/gemm_family.h"

namespace {

using namespace sim::blas;

enum class Compute : uint8_t { F16, I32, F32, F32Fast, F64, Unknown };

Compute compute_of(cublasComputeType_t t) {
  switch (t) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC: return Compute::F16;
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC: return Compute::I32;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC: return Compute::F32;
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9: return Compute::F32Fast;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC: return Compute::F64;
    default: return Compute::Unknown;
  }
}

// cublasGemmEx's table: compute type, scale type (alpha, beta), A/B type, C type.
struct GemmExTypes {
  Compute compute;
  Scalar scale;
  cudaDataType ab, c;
};
constexpr GemmExTypes kGemmEx[] = {
    {Compute::F16, Scalar::F16, CUDA_R_16F, CUDA_R_16F},       {Compute::I32, Scalar::I32, CUDA_R_8I, CUDA_R_32I},
    {Compute::F32, Scalar::F32, CUDA_R_16BF, CUDA_R_16BF},     {Compute::F32, Scalar::F32, CUDA_R_16F, CUDA_R_16F},
    {Compute::F32, Scalar::F32, CUDA_R_8I, CUDA_R_32F},        {Compute::F32, Scalar::F32, CUDA_R_16BF, CUDA_R_32F},
    {Compute::F32, Scalar::F32, CUDA_R_16F, CUDA_R_32F},       {Compute::F32, Scalar::F32, CUDA_R_32F, CUDA_R_32F},
    {Compute::F32, Scalar::C32, CUDA_C_8I, CUDA_C_32F},        {Compute::F32, Scalar::C32, CUDA_C_32F, CUDA_C_32F},
    {Compute::F32Fast, Scalar::F32, CUDA_R_32F, CUDA_R_32F},   {Compute::F32Fast, Scalar::C32, CUDA_C_32F, CUDA_C_32F},
    {Compute::F64, Scalar::F64, CUDA_R_64F, CUDA_R_64F},       {Compute::F64, Scalar::C64, CUDA_C_64F, CUDA_C_64F},
};

// cublasGemmAlgo_t's values: DEFAULT, ALGO0-23, DEFAULT_TENSOR_OP, ALGO0-15_TENSOR_OP, AUTOTUNE.
bool algo_ok(cublasGemmAlgo_t a) {
  const int v = a;
  return (v >= CUBLAS_GEMM_DEFAULT && v <= CUBLAS_GEMM_ALGO23) ||
         (v >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && v <= CUBLAS_GEMM_ALGO15_TENSOR_OP) || v == CUBLAS_GEMM_AUTOTUNE;
}

// The routine's status before the GEMM checks, and the scalar type when those may run.
cublasStatus_t gemm_ex_types(cublasHandle_t h, cudaDataType a, cudaDataType b, cudaDataType c,
                             cublasComputeType_t compute, cublasGemmAlgo_t algo, Scalar* scale) {
  if (const cublasStatus_t st = checked_call(h, compute_of(compute) != Compute::Unknown && algo_ok(algo))) return st;
  for (const GemmExTypes& t : kGemmEx) {
    if (t.compute == compute_of(compute) && t.ab == a && t.ab == b && t.c == c) {
      *scale = t.scale;
      return CUBLAS_STATUS_SUCCESS;
    }
  }
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

}  // namespace

SIM_BLAS_API cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const void* alpha, const void*, cudaDataType at, int lda, const void*,
                                         cudaDataType bt, int ldb, const void* beta, void* C, cudaDataType ct, int ldc,
                                         cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  Scalar scale = Scalar::F32;
  if (const cublasStatus_t st = gemm_ex_types(h, at, bt, ct, compute, algo, &scale)) return st;
  return gemm_family(h, {ta, tb, m, n, k, lda, ldb, ldc}, alpha, beta, C, scale, 1);
}

SIM_BLAS_API cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                                       int m, int n, int k, const void* alpha, const void*,
                                                       cudaDataType at, int lda, long long int, const void*,
                                                       cudaDataType bt, int ldb, long long int, const void* beta,
                                                       void* C, cudaDataType ct, int ldc, long long int, int batch,
                                                       cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  Scalar scale = Scalar::F32;
  if (const cublasStatus_t st = gemm_ex_types(h, at, bt, ct, compute, algo, &scale)) return st;
  return gemm_family(h, {ta, tb, m, n, k, lda, ldb, ldc}, alpha, beta, C, scale, batch);
}

// cublasSgemmEx: computes in float; C 16BF with A/B 16BF, C 16F with A/B 16F,
// C 32F with A/B 8I, 16BF, 16F or 32F.
SIM_BLAS_API cublasStatus_t cublasSgemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const float* alpha, const void*, cudaDataType at, int lda,
                                          const void*, cudaDataType bt, int ldb, const float* beta, void* C,
                                          cudaDataType ct, int ldc) {
  const bool same_in = at == bt;
  const bool ok = same_in && ((ct == CUDA_R_16BF && at == CUDA_R_16BF) || (ct == CUDA_R_16F && at == CUDA_R_16F) ||
                              (ct == CUDA_R_32F && (at == CUDA_R_8I || at == CUDA_R_16BF || at == CUDA_R_16F ||
                                                    at == CUDA_R_32F)));
  if (const cublasStatus_t st = checked_call(h, true)) return st;
  if (!ok) return CUBLAS_STATUS_NOT_SUPPORTED;
  return gemm_family(h, {ta, tb, m, n, k, lda, ldb, ldc}, alpha, beta, C, Scalar::F32, 1);
}

// cublasDotEx's table (x, y, result, execution): 16F/16F/16F/32F,
// 16BF/16BF/16BF/32F, and 32F, 64F, C32F, C64F throughout. The result is
// written as 0 with host scalars (level1.cpp).
SIM_BLAS_API cublasStatus_t cublasDotEx(cublasHandle_t h, int, const void*, cudaDataType xt, int, const void*,
                                        cudaDataType yt, int, void* result, cudaDataType rt, cudaDataType et) {
  const Call c = begin(h);
  if (c.status != CUBLAS_STATUS_SUCCESS) return c.status;
  const bool half = (xt == CUDA_R_16F || xt == CUDA_R_16BF) && et == CUDA_R_32F;
  const bool wide = (xt == CUDA_R_32F || xt == CUDA_R_64F || xt == CUDA_C_32F || xt == CUDA_C_64F) && et == xt;
  if (!(xt == yt && xt == rt && (half || wide))) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (result == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const size_t bytes = xt == CUDA_R_16F || xt == CUDA_R_16BF ? 2 : xt == CUDA_R_32F ? 4 : xt == CUDA_C_64F ? 16 : 8;
  if (c.host_scalars()) memset(result, 0, bytes);
  return CUBLAS_STATUS_SUCCESS;
}
