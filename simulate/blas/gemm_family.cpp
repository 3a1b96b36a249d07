#include "blas/gemm_family.h"

#include "blas/cublas_context.h"
#include "blas/workspace.h"

namespace sim::blas {

cublasStatus_t gemm_family(cublasHandle_t h, const GemmShape& s, const void* alpha, const void* beta, const void* C,
                           Scalar kind, int batch) {
  const Call c = begin(h);
  if (c.status != CUBLAS_STATUS_SUCCESS) return c.status;
  if (!gemm_shape_ok(s) || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (const cublasStatus_t st = gemm_scalars_ok(c.host_scalars(), alpha, beta, C, kind)) return st;
  if (!gemm_has_work(s) || s.k == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;  // no product to compute
  return run_with_workspace(c);
}

}  // namespace sim::blas
