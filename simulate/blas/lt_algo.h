// The simulated cuBLASLt's algorithms: one, id 0. cublasLtMatmulAlgoGetIds
// lists it, cublasLtMatmulAlgoInit accepts it (any other id is "outside of
// recognized range": CUBLAS_STATUS_INVALID_VALUE, cublasLt.h), and the
// heuristic returns it needing no workspace (0 bytes fits every
// CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, the default 0 included). Kernels
// are not run, so which algorithm NVIDIA's would pick is not modeled.
#pragma once

#include "blas/types.h"

namespace sim::blas::lt {

constexpr int kAlgoCount = 1;

// True if `algo`'s CUBLASLT_ALGO_CONFIG_ID names a simulated algorithm.
bool algo_known(const cublasLtMatmulAlgo_t* algo);

// What the heuristic and cublasLtMatmulAlgoCheck report for a problem.
void describe_result(cublasLtMatmulHeuristicResult_t* result);

}  // namespace sim::blas::lt
