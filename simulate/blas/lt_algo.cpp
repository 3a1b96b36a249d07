// cublasLtMatmulAlgoGetHeuristic, cublasLtMatmulAlgoGetIds,
// cublasLtMatmulAlgoInit, cublasLtMatmulAlgoCheck and the algorithm
// configuration attributes (cublasLt.h's documentation of each).
#include "blas/lt_algo.h"

#include "blas/lt_attributes.h"
#include "blas/lt_handles.h"
#include "blas/lt_problem.h"

namespace sim::blas::lt {

bool algo_known(const cublasLtMatmulAlgo_t* algo) {
  const int64_t id = get_signed(algo, kAlgoConfig, CUBLASLT_ALGO_CONFIG_ID);
  return id >= 0 && id < kAlgoCount;
}

void describe_result(cublasLtMatmulHeuristicResult_t* result) {
  result->workspaceSize = 0;
  result->state = CUBLAS_STATUS_SUCCESS;
  result->wavesCount = 1.0f;
  for (int& r : result->reserved) r = 0;
}

}  // namespace sim::blas::lt

namespace lt = sim::blas::lt;

SIM_BLAS_API cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t op,
                                                           cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                           cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                           cublasLtMatmulPreference_t pref, int requested,
                                                           cublasLtMatmulHeuristicResult_t results[], int* returned) {
  if (!lt::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested <= 0 || results == nullptr || returned == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (pref != nullptr && !lt::valid(pref, lt::kPreference)) return CUBLAS_STATUS_INVALID_VALUE;
  lt::Problem p;
  if (const cublasStatus_t st = lt::check_problem(op, a, b, c, d, &p)) return st;
  lt::init(&results[0].algo, lt::kAlgoConfig);
  lt::describe_result(&results[0]);
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_BLAS_API cublasStatus_t cublasLtMatmulAlgoGetIds(cublasLtHandle_t handle, cublasComputeType_t, cudaDataType_t,
                                                     cudaDataType_t, cudaDataType_t, cudaDataType_t, cudaDataType_t,
                                                     int requested, int ids[], int* returned) {
  if (!lt::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested <= 0 || ids == nullptr || returned == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  for (int i = 0; i < lt::kAlgoCount && i < requested; ++i) ids[i] = i;
  *returned = requested < lt::kAlgoCount ? requested : lt::kAlgoCount;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_BLAS_API cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t handle, cublasComputeType_t, cudaDataType_t,
                                                   cudaDataType_t, cudaDataType_t, cudaDataType_t, cudaDataType_t,
                                                   int id, cublasLtMatmulAlgo_t* algo) {
  if (!lt::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (algo == nullptr || id < 0 || id >= lt::kAlgoCount) return CUBLAS_STATUS_INVALID_VALUE;
  lt::init(algo, lt::kAlgoConfig);
  lt::put(algo, lt::kAlgoConfig, CUBLASLT_ALGO_CONFIG_ID, static_cast<uint32_t>(id));
  return CUBLAS_STATUS_SUCCESS;
}

// "result: ... algo field is never updated" (cublasLt.h).
SIM_BLAS_API cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t handle, cublasLtMatmulDesc_t op,
                                                    cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                    cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                    const cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulHeuristicResult_t* result) {
  if (!lt::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (algo == nullptr || result == nullptr || !lt::algo_known(algo)) return CUBLAS_STATUS_INVALID_VALUE;
  lt::Problem p;
  if (const cublasStatus_t st = lt::check_problem(op, a, b, c, d, &p)) return st;
  lt::describe_result(result);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_BLAS_API cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t* algo,
                                                                 cublasLtMatmulAlgoConfigAttributes_t attr,
                                                                 const void* buf, size_t size) {
  return lt::set(algo, lt::kAlgoConfig, attr, buf, size);
}

SIM_BLAS_API cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                                 cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
                                                                 size_t size, size_t* written) {
  return lt::get(algo, lt::kAlgoConfig, attr, buf, size, written);
}
