// The GEMM family's common path (gemm, gemmBatched, gemmStridedBatched,
// GemmEx, GemmStridedBatchedEx, SgemmEx): the documented checks
// (args.h: gemm_shape_ok, gemm_scalars_ok; a negative batch count is
// CUBLAS_STATUS_INVALID_VALUE too), then, when there is work to do, the
// default workspace pool of a handle without a workspace of the caller's
// (workspace.h). Nothing is computed.
#pragma once

#include "blas/args.h"

namespace sim::blas {

cublasStatus_t gemm_family(cublasHandle_t h, const GemmShape& s, const void* alpha, const void* beta, const void* C,
                           Scalar kind, int batch);

}  // namespace sim::blas
