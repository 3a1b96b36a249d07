#include "blas/gemm_family.h"

#include <atomic>
#include <cstdint>

#include "blas/cublas_context.h"
#include "blas/workspace.h"

namespace sim::blas {
namespace {

std::atomic<uint64_t> g_calls{0};

}  // namespace

cublasStatus_t gemm_family(cublasHandle_t h, const GemmShape& s, const void* alpha, const void* beta, const void* C,
                           Scalar kind, int batch) {
  g_calls.fetch_add(1, std::memory_order_relaxed);
  const Call c = begin(h);
  if (c.status != CUBLAS_STATUS_SUCCESS) return c.status;
  if (!gemm_shape_ok(s) || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (const cublasStatus_t st = gemm_scalars_ok(c.host_scalars(), alpha, beta, C, kind)) return st;
  if (!gemm_has_work(s) || s.k == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;  // no product to compute
  return run_with_workspace(c);
}

}  // namespace sim::blas

// Test helper (no NVIDIA API): GEMM-family calls so far, valid or not.
SIM_BLAS_API uint64_t fakegpu_cublas_gemm_calls(void) { return sim::blas::g_calls.load(); }
