// cublasSetVectorAsync, cublasGetVectorAsync, cublasSetMatrixAsync,
// cublasGetMatrixAsync (cuBLAS documentation, helper functions). Device
// memory is address space only: a copy into it is dropped, a copy out of it
// gives zeros in the host buffer (docs/simulate.md). Checked as documented and
// as the 13.1.1.3 library answers without a GPU: incx, incy or elemSize not
// positive (vectors), rows or cols negative or elemSize, lda or ldb not
// positive (matrices) is CUBLAS_STATUS_INVALID_VALUE; nothing to copy is
// success at once. Beyond it: a NULL host buffer with something to copy, or
// a span no address space holds, is CUBLAS_STATUS_INVALID_VALUE.
#include <cstdint>
#include <cstring>

#include "blas/types.h"

namespace {

constexpr unsigned __int128 kMaxSpan = static_cast<uint64_t>(1) << 56;

cublasStatus_t vector_args(int elem, int incx, int incy) {
  return elem > 0 && incx > 0 && incy > 0 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t matrix_args(int rows, int cols, int elem, int lda, int ldb) {
  return rows >= 0 && cols >= 0 && elem > 0 && lda > 0 && ldb > 0 ? CUBLAS_STATUS_SUCCESS
                                                                   : CUBLAS_STATUS_INVALID_VALUE;
}

// True if the host buffer holds `count` runs of `run` bytes, `stride` bytes
// apart (nothing to hold: always).
bool spans_ok(const void* host, int64_t count, int64_t run, int64_t stride) {
  if (count <= 0 || run <= 0) return true;
  const unsigned __int128 span =
      static_cast<unsigned __int128>(count - 1) * static_cast<uint64_t>(stride) + static_cast<uint64_t>(run);
  return host != nullptr && span <= kMaxSpan;
}

// Zeroes those runs.
cublasStatus_t zero_runs(void* host, int64_t count, int64_t run, int64_t stride) {
  if (!spans_ok(host, count, run, stride)) return CUBLAS_STATUS_INVALID_VALUE;
  auto* bytes = static_cast<unsigned char*>(host);
  for (int64_t i = 0; i < count && run > 0; ++i) memset(bytes + i * stride, 0, static_cast<size_t>(run));
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

SIM_BLAS_API cublasStatus_t cublasSetVectorAsync(int n, int elem, const void* host, int incx, void*, int incy,
                                                 cudaStream_t) {
  if (const cublasStatus_t st = vector_args(elem, incx, incy)) return st;
  return spans_ok(host, n, elem, int64_t{incx} * elem) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

SIM_BLAS_API cublasStatus_t cublasGetVectorAsync(int n, int elem, const void*, int incx, void* host, int incy,
                                                 cudaStream_t) {
  if (const cublasStatus_t st = vector_args(elem, incx, incy)) return st;
  return zero_runs(host, n, elem, int64_t{incy} * elem);
}

SIM_BLAS_API cublasStatus_t cublasSetMatrixAsync(int rows, int cols, int elem, const void* A, int lda, void*, int ldb,
                                                 cudaStream_t) {
  if (const cublasStatus_t st = matrix_args(rows, cols, elem, lda, ldb)) return st;
  if (rows == 0) return CUBLAS_STATUS_SUCCESS;
  return spans_ok(A, cols, int64_t{rows} * elem, int64_t{lda} * elem) ? CUBLAS_STATUS_SUCCESS
                                                                       : CUBLAS_STATUS_INVALID_VALUE;
}

SIM_BLAS_API cublasStatus_t cublasGetMatrixAsync(int rows, int cols, int elem, const void*, int lda, void* B, int ldb,
                                                 cudaStream_t) {
  if (const cublasStatus_t st = matrix_args(rows, cols, elem, lda, ldb)) return st;
  if (rows == 0) return CUBLAS_STATUS_SUCCESS;
  return zero_runs(B, cols, int64_t{rows} * elem, int64_t{ldb} * elem);
}
