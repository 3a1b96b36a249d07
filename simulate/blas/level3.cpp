// cuBLAS Level-3 routines PyTorch imports (cuBLAS documentation, "cuBLAS
// Level-3 Function Reference"), checked as each documents and succeeding
// without computing. The GEMM family goes through gemm_family.h (which may
// take the default workspace); the others document the same kind of checks:
// modes that are none of the enum's, negative sizes, a leading dimension
// below max(1, rows of what it stores), a NULL alpha or beta.
#include "blas/args.h"
#include "blas/cublas_context.h"
#include "blas/gemm_family.h"

namespace {

using namespace sim::blas;

// Rows of the op(A) of syrk/syr2k (n x k) as stored.
int rank_k_rows(cublasOperation_t trans, int n, int k) { return trans == CUBLAS_OP_N ? max1(n) : max1(k); }
// Rows of the triangular or symmetric A of trmm/trsm/symm (m x m or n x n).
int side_rows(cublasSideMode_t side, int m, int n) { return side == CUBLAS_SIDE_LEFT ? max1(m) : max1(n); }

// The checks trmm, trsm and trsmBatched share (B m x n, A triangular).
bool triangular_ok(cublasSideMode_t side, cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag, int m,
                   int n, int lda, int ldb, const void* alpha) {
  return side_ok(side) && fill_ok(uplo) && op_ok(trans) && diag_ok(diag) && m >= 0 && n >= 0 &&
         lda >= side_rows(side, m, n) && ldb >= max1(m) && alpha != nullptr;
}

}  // namespace

#define SIM_GEMM(NAME, T)                                                                                         \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, \
                                   const T* alpha, const T*, int lda, const T*, int ldb, const T* beta, T* C,       \
                                   int ldc) {                                                                     \
    return gemm_family(h, {ta, tb, m, n, k, lda, ldb, ldc}, alpha, beta, C, scalar_of<T>(), 1);                    \
  }
SIM_GEMM(cublasSgemm_v2, float)
SIM_GEMM(cublasDgemm_v2, double)
SIM_GEMM(cublasCgemm_v2, cuComplex)
SIM_GEMM(cublasZgemm_v2, cuDoubleComplex)

#define SIM_GEMM_BATCHED(NAME, T)                                                                                 \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, \
                                   const T* alpha, const T* const[], int lda, const T* const[], int ldb,           \
                                   const T* beta, T* const C[], int ldc, int batch) {                             \
    return gemm_family(h, {ta, tb, m, n, k, lda, ldb, ldc}, alpha, beta, C, scalar_of<T>(), batch);               \
  }
SIM_GEMM_BATCHED(cublasSgemmBatched, float)
SIM_GEMM_BATCHED(cublasDgemmBatched, double)
SIM_GEMM_BATCHED(cublasCgemmBatched, cuComplex)
SIM_GEMM_BATCHED(cublasZgemmBatched, cuDoubleComplex)

#define SIM_GEMM_STRIDED(NAME, T)                                                                                 \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, \
                                   const T* alpha, const T*, int lda, long long int, const T*, int ldb,           \
                                   long long int, const T* beta, T* C, int ldc, long long int, int batch) {       \
    return gemm_family(h, {ta, tb, m, n, k, lda, ldb, ldc}, alpha, beta, C, scalar_of<T>(), batch);               \
  }
SIM_GEMM_STRIDED(cublasSgemmStridedBatched, float)
SIM_GEMM_STRIDED(cublasDgemmStridedBatched, double)
SIM_GEMM_STRIDED(cublasCgemmStridedBatched, cuComplex)
SIM_GEMM_STRIDED(cublasZgemmStridedBatched, cuDoubleComplex)

// C = alpha A B + beta C (or B A), A symmetric or Hermitian.
#define SIM_SYMM(NAME, T)                                                                                         \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, int m, int n,   \
                                   const T* alpha, const T*, int lda, const T*, int ldb, const T* beta, T*,       \
                                   int ldc) {                                                                     \
    return checked_call(h, side_ok(side) && fill_ok(uplo) && m >= 0 && n >= 0 && lda >= side_rows(side, m, n) &&        \
                          ldb >= max1(m) && ldc >= max1(m) && alpha != nullptr && beta != nullptr);              \
  }
SIM_SYMM(cublasSsymm_v2, float)
SIM_SYMM(cublasDsymm_v2, double)
SIM_SYMM(cublasCsymm_v2, cuComplex)
SIM_SYMM(cublasZsymm_v2, cuDoubleComplex)
SIM_SYMM(cublasChemm_v2, cuComplex)
SIM_SYMM(cublasZhemm_v2, cuDoubleComplex)

// C = alpha op(A) op(A)^T + beta C (herk: real alpha and beta, of type S).
#define SIM_SYRK(NAME, S, T)                                                                                      \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k, \
                                   const S* alpha, const T*, int lda, const S* beta, T*, int ldc) {               \
    return checked_call(h, fill_ok(uplo) && op_ok(trans) && n >= 0 && k >= 0 && lda >= rank_k_rows(trans, n, k) &&      \
                          ldc >= max1(n) && alpha != nullptr && beta != nullptr);                                \
  }
SIM_SYRK(cublasSsyrk_v2, float, float)
SIM_SYRK(cublasDsyrk_v2, double, double)
SIM_SYRK(cublasCsyrk_v2, cuComplex, cuComplex)
SIM_SYRK(cublasZsyrk_v2, cuDoubleComplex, cuDoubleComplex)
SIM_SYRK(cublasCherk_v2, float, cuComplex)
SIM_SYRK(cublasZherk_v2, double, cuDoubleComplex)

// C = alpha (op(A) op(B)^T + op(B) op(A)^T) + beta C (her2k: real beta, of type S).
#define SIM_SYR2K(NAME, S, T)                                                                                     \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k, \
                                   const T* alpha, const T*, int lda, const T*, int ldb, const S* beta, T*,       \
                                   int ldc) {                                                                     \
    return checked_call(h, fill_ok(uplo) && op_ok(trans) && n >= 0 && k >= 0 && lda >= rank_k_rows(trans, n, k) &&      \
                          ldb >= rank_k_rows(trans, n, k) && ldc >= max1(n) && alpha != nullptr &&               \
                          beta != nullptr);                                                                      \
  }
SIM_SYR2K(cublasSsyr2k_v2, float, float)
SIM_SYR2K(cublasDsyr2k_v2, double, double)
SIM_SYR2K(cublasCsyr2k_v2, cuComplex, cuComplex)
SIM_SYR2K(cublasZsyr2k_v2, cuDoubleComplex, cuDoubleComplex)
SIM_SYR2K(cublasCher2k_v2, float, cuComplex)
SIM_SYR2K(cublasZher2k_v2, double, cuDoubleComplex)

// C = alpha op(A) B (or B op(A)), A triangular; cuBLAS's trmm writes C.
#define SIM_TRMM(NAME, T)                                                                                         \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo,                \
                                   cublasOperation_t trans, cublasDiagType_t diag, int m, int n, const T* alpha,  \
                                   const T*, int lda, const T*, int ldb, T*, int ldc) {                           \
    return checked_call(h, triangular_ok(side, uplo, trans, diag, m, n, lda, ldb, alpha) && ldc >= max1(m));      \
  }
SIM_TRMM(cublasStrmm_v2, float)
SIM_TRMM(cublasDtrmm_v2, double)
SIM_TRMM(cublasCtrmm_v2, cuComplex)
SIM_TRMM(cublasZtrmm_v2, cuDoubleComplex)

// Solves op(A) X = alpha B (or X op(A) = alpha B) in place of B.
#define SIM_TRSM(NAME, T)                                                                                         \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo,                \
                                   cublasOperation_t trans, cublasDiagType_t diag, int m, int n, const T* alpha,  \
                                   const T*, int lda, T*, int ldb) {                                              \
    return checked_call(h, triangular_ok(side, uplo, trans, diag, m, n, lda, ldb, alpha));                        \
  }
SIM_TRSM(cublasStrsm_v2, float)
SIM_TRSM(cublasDtrsm_v2, double)
SIM_TRSM(cublasCtrsm_v2, cuComplex)
SIM_TRSM(cublasZtrsm_v2, cuDoubleComplex)

#define SIM_TRSM_BATCHED(NAME, T)                                                                                 \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo,                \
                                   cublasOperation_t trans, cublasDiagType_t diag, int m, int n, const T* alpha,  \
                                   const T* const[], int lda, T* const[], int ldb, int batch) {                   \
    return checked_call(h, triangular_ok(side, uplo, trans, diag, m, n, lda, ldb, alpha) && batch >= 0);          \
  }
SIM_TRSM_BATCHED(cublasStrsmBatched, float)
SIM_TRSM_BATCHED(cublasDtrsmBatched, double)
SIM_TRSM_BATCHED(cublasCtrsmBatched, cuComplex)
SIM_TRSM_BATCHED(cublasZtrsmBatched, cuDoubleComplex)
