// cublasLtMatmul: checks its arguments as documented (cuBLAS documentation,
// cublasLtMatmul(): "CUBLAS_STATUS_INVALID_VALUE - If the parameters are
// unexpectedly NULL, in conflict or in an impossible configuration"; "The
// workspace pointer must be aligned to at least a multiple of 256 bytes") and
// succeeds without computing. The workspace is the caller's: the simulated
// library allocates no device memory here (algorithms need none, lt_algo.h).
#include <atomic>
#include <cstdint>
#include <initializer_list>

#include "blas/lt_algo.h"
#include "blas/lt_attributes.h"
#include "blas/lt_handles.h"
#include "blas/lt_problem.h"

namespace lt = sim::blas::lt;

namespace {

std::atomic<uint64_t> g_calls{0};

bool same_layout(cublasLtMatrixLayout_t x, cublasLtMatrixLayout_t y) {
  for (const int attr : {CUBLASLT_MATRIX_LAYOUT_TYPE, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_MATRIX_LAYOUT_ROWS,
                         CUBLASLT_MATRIX_LAYOUT_COLS, CUBLASLT_MATRIX_LAYOUT_LD, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT})
    if (lt::get_unsigned(x, lt::kMatrixLayout, attr) != lt::get_unsigned(y, lt::kMatrixLayout, attr)) return false;
  return true;
}

bool workspace_ok(const void* workspace, size_t bytes) {
  if (bytes == 0) return true;
  return workspace != nullptr && reinterpret_cast<uintptr_t>(workspace) % 256 == 0;
}

}  // namespace

SIM_BLAS_API cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t op, const void* alpha,
                                           const void* A, cublasLtMatrixLayout_t a, const void* B,
                                           cublasLtMatrixLayout_t b, const void* beta, const void* C,
                                           cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                                           const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                                           cudaStream_t) {
  g_calls.fetch_add(1, std::memory_order_relaxed);
  if (!lt::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  lt::Problem p;
  if (const cublasStatus_t st = lt::check_problem(op, a, b, c, d, &p)) return st;
  if (alpha == nullptr || beta == nullptr || !workspace_ok(workspace, workspace_bytes))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (algo != nullptr && !lt::algo_known(algo)) return CUBLAS_STATUS_INVALID_VALUE;
  // In place (C == D) needs Cdesc == Ddesc.
  if (C == D && !p.c_is_d_desc && !same_layout(c, d)) return CUBLAS_STATUS_INVALID_VALUE;
  if (!lt::empty(p) && (D == nullptr || ((A == nullptr || B == nullptr) && p.a.rows * p.a.cols != 0)))
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

// Test helper (no NVIDIA API): cublasLtMatmul calls so far, valid or not.
SIM_BLAS_API uint64_t fakegpu_cublaslt_matmul_calls(void) { return g_calls.load(); }
