// cuBLAS Level-2 routines PyTorch imports (cuBLAS documentation, "cuBLAS
// Level-2 Function Reference"), checked as each documents
// (CUBLAS_STATUS_INVALID_VALUE: negative sizes, a zero increment, a mode that
// is none of the enum's, a leading dimension below max(1, rows), a NULL
// alpha or beta) and succeeding without computing.
#include "blas/args.h"
#include "blas/cublas_context.h"

namespace {

using namespace sim::blas;

bool incs_ok(int incx, int incy) { return incx != 0 && incy != 0; }

}  // namespace

// y = alpha op(A) x + beta y, A m x n.
#define SIM_GEMV(NAME, T)                                                                                \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t trans, int m, int n, const T* alpha, \
                                   const T*, int lda, const T*, int incx, const T* beta, T*, int incy) {   \
    return checked_call(h, op_ok(trans) && m >= 0 && n >= 0 && lda >= max1(m) && incs_ok(incx, incy) &&       \
                          alpha != nullptr && beta != nullptr);                                          \
  }
SIM_GEMV(cublasSgemv_v2, float)
SIM_GEMV(cublasDgemv_v2, double)
SIM_GEMV(cublasCgemv_v2, cuComplex)
SIM_GEMV(cublasZgemv_v2, cuDoubleComplex)

// A = alpha x y^T (or y^H) + A, A m x n.
#define SIM_GER(NAME, T)                                                                                        \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, int m, int n, const T* alpha, const T*, int incx, const T*, \
                                   int incy, T*, int lda) {                                                     \
    return checked_call(h, m >= 0 && n >= 0 && incs_ok(incx, incy) && lda >= max1(m) && alpha != nullptr);           \
  }
SIM_GER(cublasSger_v2, float)
SIM_GER(cublasDger_v2, double)
SIM_GER(cublasCgeru_v2, cuComplex)
SIM_GER(cublasCgerc_v2, cuComplex)
SIM_GER(cublasZgeru_v2, cuDoubleComplex)
SIM_GER(cublasZgerc_v2, cuDoubleComplex)

// y = alpha A x + beta y, A n x n symmetric or Hermitian.
#define SIM_SYMV(NAME, T)                                                                                        \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasFillMode_t uplo, int n, const T* alpha, const T*,    \
                                   int lda, const T*, int incx, const T* beta, T*, int incy) {                  \
    return checked_call(h, fill_ok(uplo) && n >= 0 && lda >= max1(n) && incs_ok(incx, incy) && alpha != nullptr &&   \
                          beta != nullptr);                                                                     \
  }
SIM_SYMV(cublasSsymv_v2, float)
SIM_SYMV(cublasDsymv_v2, double)
SIM_SYMV(cublasCsymv_v2, cuComplex)
SIM_SYMV(cublasZsymv_v2, cuDoubleComplex)
SIM_SYMV(cublasChemv_v2, cuComplex)
SIM_SYMV(cublasZhemv_v2, cuDoubleComplex)

// A = alpha x x^T + A (her: alpha real, of type S).
#define SIM_SYR(NAME, S, T)                                                                                 \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasFillMode_t uplo, int n, const S* alpha, const T*, \
                                   int incx, T*, int lda) {                                                 \
    return checked_call(h, fill_ok(uplo) && n >= 0 && incx != 0 && lda >= max1(n) && alpha != nullptr);          \
  }
SIM_SYR(cublasSsyr_v2, float, float)
SIM_SYR(cublasDsyr_v2, double, double)
SIM_SYR(cublasCsyr_v2, cuComplex, cuComplex)
SIM_SYR(cublasZsyr_v2, cuDoubleComplex, cuDoubleComplex)
SIM_SYR(cublasCher_v2, float, cuComplex)
SIM_SYR(cublasZher_v2, double, cuDoubleComplex)

// A = alpha (x y^T + y x^T) + A.
#define SIM_SYR2(NAME, T)                                                                                   \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasFillMode_t uplo, int n, const T* alpha, const T*, \
                                   int incx, const T*, int incy, T*, int lda) {                             \
    return checked_call(h, fill_ok(uplo) && n >= 0 && incs_ok(incx, incy) && lda >= max1(n) && alpha != nullptr); \
  }
SIM_SYR2(cublasSsyr2_v2, float)
SIM_SYR2(cublasDsyr2_v2, double)
SIM_SYR2(cublasCsyr2_v2, cuComplex)
SIM_SYR2(cublasZsyr2_v2, cuDoubleComplex)
SIM_SYR2(cublasCher2_v2, cuComplex)
SIM_SYR2(cublasZher2_v2, cuDoubleComplex)

// x = op(A) x and x = op(A)^-1 x, A n x n triangular.
#define SIM_TRMV(NAME, T)                                                                                     \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans,          \
                                   cublasDiagType_t diag, int n, const T*, int lda, T*, int incx) {           \
    return checked_call(h, fill_ok(uplo) && op_ok(trans) && diag_ok(diag) && n >= 0 && lda >= max1(n) && incx != 0); \
  }
SIM_TRMV(cublasStrmv_v2, float)
SIM_TRMV(cublasDtrmv_v2, double)
SIM_TRMV(cublasCtrmv_v2, cuComplex)
SIM_TRMV(cublasZtrmv_v2, cuDoubleComplex)
SIM_TRMV(cublasStrsv_v2, float)
SIM_TRMV(cublasDtrsv_v2, double)
SIM_TRMV(cublasCtrsv_v2, cuComplex)
SIM_TRMV(cublasZtrsv_v2, cuDoubleComplex)
