// cuBLAS's batched LU, QR and least-squares routines PyTorch imports (cuBLAS
// documentation, "BLAS-like Extension": getrfBatched, getrsBatched,
// geqrfBatched, gelsBatched), checked as documented and succeeding without
// computing. getrs, geqrf and gels report on a host `info` too: 0 when the
// parameters are valid, else -(the position of the first invalid one). The
// documentation does not say how positions are counted; here the handle is
// position 1. A NULL host `info` is CUBLAS_STATUS_INVALID_VALUE.
#include <initializer_list>
#include <utility>

#include "blas/args.h"
#include "blas/cublas_context.h"

namespace {

using namespace sim::blas;

// {is invalid, position} in argument order.
using Rule = std::pair<bool, int>;

cublasStatus_t with_info(cublasHandle_t h, int* info, std::initializer_list<Rule> rules, cublasStatus_t bad) {
  const Call c = begin(h);
  if (c.status != CUBLAS_STATUS_SUCCESS) return c.status;
  if (info == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  for (const Rule& r : rules) {
    if (r.first) {
      *info = -r.second;
      return bad;
    }
  }
  *info = 0;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

// "CUBLAS_STATUS_INVALID_VALUE: The parameters n < 0 or batchSize < 0 or lda <0" (infoArray is device memory).
#define SIM_GETRF(NAME, T)                                                                                     \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, int n, T* const[], int lda, int*, int*, int batch) {      \
    return checked_call(h, n >= 0 && batch >= 0 && lda >= 0);                                                  \
  }
SIM_GETRF(cublasSgetrfBatched, float)
SIM_GETRF(cublasDgetrfBatched, double)
SIM_GETRF(cublasCgetrfBatched, cuComplex)
SIM_GETRF(cublasZgetrfBatched, cuDoubleComplex)

#define SIM_GETRS(NAME, T)                                                                                       \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t trans, int n, int nrhs, const T* const[], \
                                   int lda, const int*, T* const[], int ldb, int* info, int batch) {             \
    return with_info(h, info,                                                                                    \
                     {{!op_ok(trans), 2}, {n < 0, 3}, {nrhs < 0, 4}, {lda < max1(n), 6}, {ldb < max1(n), 9},    \
                      {batch < 0, 11}},                                                                          \
                     CUBLAS_STATUS_INVALID_VALUE);                                                               \
  }
SIM_GETRS(cublasSgetrsBatched, float)
SIM_GETRS(cublasDgetrsBatched, double)
SIM_GETRS(cublasCgetrsBatched, cuComplex)
SIM_GETRS(cublasZgetrsBatched, cuDoubleComplex)

#define SIM_GEQRF(NAME, T)                                                                                        \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, int m, int n, T* const[], int lda, T* const[], int* info,    \
                                   int batch) {                                                                   \
    return with_info(h, info, {{m < 0, 2}, {n < 0, 3}, {lda < max1(m), 5}, {batch < 0, 8}},                       \
                     CUBLAS_STATUS_INVALID_VALUE);                                                                \
  }
SIM_GEQRF(cublasSgeqrfBatched, float)
SIM_GEQRF(cublasDgeqrfBatched, double)
SIM_GEQRF(cublasCgeqrfBatched, cuComplex)
SIM_GEQRF(cublasZgeqrfBatched, cuDoubleComplex)

// Invalid sizes are CUBLAS_STATUS_INVALID_VALUE; "m < n or trans is different
// from non-transpose" CUBLAS_STATUS_NOT_SUPPORTED.
#define SIM_GELS(NAME, T)                                                                                         \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t trans, int m, int n, int nrhs, T* const[], \
                                   int lda, T* const[], int ldc, int* info, int*, int batch) {                    \
    const cublasStatus_t st =                                                                                     \
        with_info(h, info,                                                                                        \
                  {{m < 0, 3}, {n < 0, 4}, {nrhs < 0, 5}, {lda < max1(m), 7}, {ldc < max1(m), 9}, {batch < 0, 12}}, \
                  CUBLAS_STATUS_INVALID_VALUE);                                                                   \
    if (st != CUBLAS_STATUS_SUCCESS) return st;                                                                   \
    return with_info(h, info, {{trans != CUBLAS_OP_N, 2}, {m < n, 3}}, CUBLAS_STATUS_NOT_SUPPORTED);              \
  }
SIM_GELS(cublasSgelsBatched, float)
SIM_GELS(cublasDgelsBatched, double)
SIM_GELS(cublasCgelsBatched, cuComplex)
SIM_GELS(cublasZgelsBatched, cuDoubleComplex)
