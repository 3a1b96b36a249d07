// The multiplication a matmul descriptor and four matrix layouts describe,
// checked as cublasLtMatmul documents it (cuBLAS documentation,
// cublasLtMatmul(): D = alpha * op(A) op(B) + beta * C; "C == D and Cdesc ==
// Ddesc" in place, otherwise C and D have the same number of rows, columns,
// batch size and memory order, and C's leading dimension may be 0; "If
// Cdesc is omitted, this function assumes it to be equal to Ddesc").
#pragma once

#include <cstdint>

#include "blas/types.h"

namespace sim::blas::lt {

struct Layout {
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t order = 0, batch = 1;
};

struct Problem {
  Layout a, b, c, d;
  bool c_is_d_desc = false;  // Cdesc omitted or the same descriptor as Ddesc
};

// CUBLAS_STATUS_INVALID_VALUE if a descriptor is NULL or no descriptor
// (Cdesc may be NULL), a transpose is not N, T or C, the dimensions of
// op(A) (m x k), op(B) (k x n) and D (m x n) disagree, C and D differ in
// rows, columns, batch count or order, a batch count is below 1 or differs
// from D's, or a leading dimension is below the rows (columns in row order)
// of its matrix (C's may be 0). Fills *p on success.
cublasStatus_t check_problem(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                             cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, Problem* p);

// True if the problem computes nothing (D has no element).
inline bool empty(const Problem& p) { return p.d.rows == 0 || p.d.cols == 0; }

}  // namespace sim::blas::lt
