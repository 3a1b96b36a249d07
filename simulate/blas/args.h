// Argument checks the cuBLAS documentation lists (CUBLAS_STATUS_INVALID_VALUE
// conditions of each routine), shared by the routines of simulate/blas/.
#pragma once

#include <cstdint>

#include "blas/types.h"

namespace sim::blas {

inline bool op_ok(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }
inline bool fill_ok(cublasFillMode_t f) { return f == CUBLAS_FILL_MODE_LOWER || f == CUBLAS_FILL_MODE_UPPER; }
inline bool side_ok(cublasSideMode_t s) { return s == CUBLAS_SIDE_LEFT || s == CUBLAS_SIDE_RIGHT; }
inline bool diag_ok(cublasDiagType_t d) { return d == CUBLAS_DIAG_NON_UNIT || d == CUBLAS_DIAG_UNIT; }
inline int max1(int v) { return v > 1 ? v : 1; }

// The type of a host scalar (alpha, beta) or result.
enum class Scalar : uint8_t { F16, BF16, F32, F64, C32, C64, I32 };

template <typename T>
constexpr Scalar scalar_of();
template <>
constexpr Scalar scalar_of<float>() { return Scalar::F32; }
template <>
constexpr Scalar scalar_of<double>() { return Scalar::F64; }
template <>
constexpr Scalar scalar_of<cuComplex>() { return Scalar::C32; }
template <>
constexpr Scalar scalar_of<cuDoubleComplex>() { return Scalar::C64; }

// True if the host scalar at `p` is zero (+0 or -0).
bool scalar_zero(const void* p, Scalar kind);

// The matrix-multiply shape of the GEMM family: cublas<t>gemm's
// CUBLAS_STATUS_INVALID_VALUE list (m, n, k < 0; transa or transb not N, T
// or C; lda < max(1, m) for op N, max(1, k) otherwise; ldb < max(1, k) for
// op N, max(1, n) otherwise; ldc < max(1, m)).
struct GemmShape {
  cublasOperation_t transa, transb;
  int m, n, k, lda, ldb, ldc;
};
bool gemm_shape_ok(const GemmShape& s);
// True if the multiplication touches C at all (m and n positive).
inline bool gemm_has_work(const GemmShape& s) { return s.m > 0 && s.n > 0; }

// The scalar rules of the GEMM family: alpha and beta not NULL, and, with
// host scalars, C not NULL when beta is not zero (beta is not read with
// device scalars: device memory is not readable here).
cublasStatus_t gemm_scalars_ok(bool host_scalars, const void* alpha, const void* beta, const void* C, Scalar kind);

}  // namespace sim::blas
