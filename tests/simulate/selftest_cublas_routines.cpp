// The cuBLAS routines' documented argument checks (cuBLAS documentation, each
// routine's CUBLAS_STATUS_INVALID_VALUE list), with fake device addresses:
// nothing is computed and device memory is never read.
#include <cstring>

#include "selftest_blas.h"
#include "selftest_check.h"

namespace {

const auto kN = CUBLAS_OP_N;
const auto kT = CUBLAS_OP_T;
float* const kDev = reinterpret_cast<float*>(0x100000001000ull);  // a device address (not dereferenced)

void gemm_checks(cublasHandle_t h) {
  const float one = 1.0f, zero = 0.0f;
  CHECK_EQ(cublasSgemm_v2(h, kN, kN, 4, 3, 2, &one, kDev, 4, kDev, 2, &one, kDev, 4), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSgemm_v2(h, kT, kT, 4, 3, 2, &one, kDev, 2, kDev, 3, &one, kDev, 4), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSgemm_v2(h, kN, kN, -1, 3, 2, &one, kDev, 4, kDev, 2, &one, kDev, 4), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemm_v2(h, kN, kN, 4, 3, -2, &one, kDev, 4, kDev, 2, &one, kDev, 4), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemm_v2(h, CUBLAS_OP_CONJG, kN, 4, 3, 2, &one, kDev, 4, kDev, 2, &one, kDev, 4),
           CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemm_v2(h, kN, kN, 4, 3, 2, &one, kDev, 3, kDev, 2, &one, kDev, 4), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemm_v2(h, kT, kN, 4, 3, 2, &one, kDev, 1, kDev, 2, &one, kDev, 4), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemm_v2(h, kN, kN, 4, 3, 2, &one, kDev, 4, kDev, 1, &one, kDev, 4), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemm_v2(h, kN, kT, 4, 3, 2, &one, kDev, 4, kDev, 3, &one, kDev, 4), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSgemm_v2(h, kN, kT, 4, 3, 2, &one, kDev, 4, kDev, 2, &one, kDev, 4), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemm_v2(h, kN, kN, 4, 3, 2, &one, kDev, 4, kDev, 2, &one, kDev, 3), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemm_v2(h, kN, kN, 4, 3, 2, nullptr, kDev, 4, kDev, 2, &one, kDev, 4), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemm_v2(h, kN, kN, 4, 3, 2, &one, kDev, 4, kDev, 2, nullptr, kDev, 4), CUBLAS_STATUS_INVALID_VALUE);
  // "if C is NULL when beta is not zero" -- read only with host scalars.
  CHECK_EQ(cublasSgemm_v2(h, kN, kN, 4, 3, 2, &one, kDev, 4, kDev, 2, &one, nullptr, 4), CUBLAS_STATUS_INVALID_VALUE);
  const float minus_zero = -0.0f;
  CHECK_EQ(cublasSgemm_v2(h, kN, kN, 4, 3, 2, &one, kDev, 4, kDev, 2, &minus_zero, nullptr, 4), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSgemm_v2(h, kN, kN, 4, 3, 2, kDev, kDev, 4, kDev, 2, kDev, nullptr, 4), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST), CUBLAS_STATUS_SUCCESS);
  // Empty problems (m, n or k 0; ld at least 1).
  CHECK_EQ(cublasSgemm_v2(h, kN, kN, 0, 0, 0, &one, nullptr, 1, nullptr, 1, &zero, nullptr, 1), CUBLAS_STATUS_SUCCESS);
  const cuDoubleComplex zbeta = {0.0, 1.0};
  CHECK_EQ(cublasZgemm_v2(h, kN, kN, 2, 2, 2, &zbeta, nullptr, 2, nullptr, 2, &zbeta, nullptr, 2),
           CUBLAS_STATUS_INVALID_VALUE);  // imaginary beta is not zero
  CHECK_EQ(cublasSgemmStridedBatched(h, kN, kN, 4, 3, 2, &one, kDev, 4, 8, kDev, 2, 6, &one, kDev, 4, 12, -1),
           CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemmStridedBatched(h, kN, kN, 4, 3, 2, &one, kDev, 4, 8, kDev, 2, 6, &one, kDev, 4, 12, 5),
           CUBLAS_STATUS_SUCCESS);
  const double done = 1.0;
  CHECK_EQ(cublasDgemmBatched(h, kN, kN, 4, 3, 2, &done, nullptr, 4, nullptr, 2, &done, nullptr, 4, 0),
           CUBLAS_STATUS_INVALID_VALUE);  // Carray NULL with beta 1
}

void gemm_ex_checks(cublasHandle_t h) {
  const float one = 1.0f;
  const uint16_t half_one = 0x3c00;
  auto ex = [&](cudaDataType ab, cudaDataType c, cublasComputeType_t compute, const void* scale, cublasGemmAlgo_t algo) {
    return cublasGemmEx(h, kN, kN, 8, 8, 8, scale, kDev, ab, 8, kDev, ab, 8, scale, kDev, c, 8, compute, algo);
  };
  CHECK_EQ(ex(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, &one, CUBLAS_GEMM_DEFAULT), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(ex(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, &one, CUBLAS_GEMM_DEFAULT_TENSOR_OP), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(ex(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, &half_one, CUBLAS_GEMM_DEFAULT), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(ex(CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, &one, CUBLAS_GEMM_DEFAULT), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(ex(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, &one, CUBLAS_GEMM_DEFAULT), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(ex(CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_16F, &half_one, CUBLAS_GEMM_DEFAULT), CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK_EQ(ex(CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, &one, CUBLAS_GEMM_DEFAULT), CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK_EQ(ex(CUDA_R_16F, CUDA_R_16F, static_cast<cublasComputeType_t>(66), &one, CUBLAS_GEMM_DEFAULT),
           CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(ex(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, &one, static_cast<cublasGemmAlgo_t>(50)),
           CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasGemmEx(h, kN, kN, 8, 8, 8, &one, kDev, CUDA_R_16F, 8, kDev, CUDA_R_16BF, 8, &one, kDev, CUDA_R_32F, 8,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
           CUBLAS_STATUS_NOT_SUPPORTED);  // A and B of different types
  CHECK_EQ(cublasGemmStridedBatchedEx(h, kN, kT, 8, 8, 8, &one, kDev, CUDA_R_16BF, 8, 64, kDev, CUDA_R_16BF, 8, 64,
                                      &one, kDev, CUDA_R_16BF, 8, 64, 3, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSgemmEx(h, kN, kN, 8, 8, 8, &one, kDev, CUDA_R_16F, 8, kDev, CUDA_R_16F, 8, &one, kDev, CUDA_R_32F, 8),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSgemmEx(h, kN, kN, 8, 8, 8, &one, kDev, CUDA_R_64F, 8, kDev, CUDA_R_64F, 8, &one, kDev, CUDA_R_64F, 8),
           CUBLAS_STATUS_NOT_SUPPORTED);
}

void level1_2_checks(cublasHandle_t h) {
  float r = 7.0f;
  CHECK_EQ(cublasSdot_v2(h, 16, kDev, 1, kDev, 1, &r), CUBLAS_STATUS_SUCCESS);
  CHECK(r == 0.0f);  // host result: not computed, 0
  CHECK_EQ(cublasSdot_v2(h, 16, kDev, 1, kDev, 1, nullptr), CUBLAS_STATUS_INVALID_VALUE);
  int idx = 7;
  CHECK_EQ(cublasIsamax_v2(h, 16, kDev, 1, &idx), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(idx, 0);
  double nrm = 3.0;
  CHECK_EQ(cublasDznrm2_v2(h, 4, nullptr, 1, &nrm), CUBLAS_STATUS_SUCCESS);
  CHECK(nrm == 0.0);
  uint16_t hdot = 0x1234;
  CHECK_EQ(cublasDotEx(h, 8, kDev, CUDA_R_16BF, 1, kDev, CUDA_R_16BF, 1, &hdot, CUDA_R_16BF, CUDA_R_32F),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(hdot, 0);
  CHECK_EQ(cublasDotEx(h, 8, kDev, CUDA_R_16F, 1, kDev, CUDA_R_16F, 1, &hdot, CUDA_R_16F, CUDA_R_16F),
           CUBLAS_STATUS_NOT_SUPPORTED);
  const float one = 1.0f;
  CHECK_EQ(cublasSaxpy_v2(h, 16, &one, kDev, 1, kDev, 1), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSgemv_v2(h, kT, 4, 3, &one, kDev, 4, kDev, 1, &one, kDev, 1), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSgemv_v2(h, kT, 4, 3, &one, kDev, 4, kDev, 0, &one, kDev, 1), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemv_v2(h, kN, 4, 3, &one, kDev, 2, kDev, 1, &one, kDev, 1), CUBLAS_STATUS_INVALID_VALUE);
  // Device scalars: the result is device memory, never written here.
  CHECK_EQ(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSdot_v2(h, 16, kDev, 1, kDev, 1, kDev), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST), CUBLAS_STATUS_SUCCESS);
}

void level3_solver_checks(cublasHandle_t h) {
  const float one = 1.0f;
  const auto L = CUBLAS_SIDE_LEFT;
  const auto lo = CUBLAS_FILL_MODE_LOWER;
  const auto nu = CUBLAS_DIAG_NON_UNIT;
  CHECK_EQ(cublasStrsm_v2(h, L, lo, kN, nu, 4, 3, &one, kDev, 4, kDev, 4), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasStrsm_v2(h, static_cast<cublasSideMode_t>(2), lo, kN, nu, 4, 3, &one, kDev, 4, kDev, 4),
           CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasStrsm_v2(h, CUBLAS_SIDE_RIGHT, lo, kN, nu, 4, 3, &one, kDev, 2, kDev, 4), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasStrsm_v2(h, L, CUBLAS_FILL_MODE_FULL, kN, nu, 4, 3, &one, kDev, 4, kDev, 4),
           CUBLAS_STATUS_INVALID_VALUE);
  const double done = 1.0;
  CHECK_EQ(cublasDtrsmBatched(h, L, lo, kN, nu, 4, 3, &done, nullptr, 4, nullptr, 4, -1), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasCherk_v2(h, lo, CUBLAS_OP_C, 4, 3, &one, nullptr, 3, &one, nullptr, 4), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasCherk_v2(h, lo, kN, 4, 3, &one, nullptr, 3, &one, nullptr, 4), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgetrfBatched(h, 4, nullptr, 4, nullptr, nullptr, 2), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSgetrfBatched(h, -1, nullptr, 4, nullptr, nullptr, 2), CUBLAS_STATUS_INVALID_VALUE);
  int info = 99;
  CHECK_EQ(cublasSgetrsBatched(h, kN, 4, 2, nullptr, 4, nullptr, nullptr, 4, &info, 3), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(info, 0);
  CHECK_EQ(cublasSgetrsBatched(h, kN, 4, 2, nullptr, 4, nullptr, nullptr, 3, &info, 3), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(info, -9);  // ldb, the 9th argument
  CHECK_EQ(cublasSgetrsBatched(h, kN, 4, 2, nullptr, 4, nullptr, nullptr, 4, nullptr, 3), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgelsBatched(h, kN, 4, 2, 1, nullptr, 4, nullptr, 4, &info, nullptr, 2), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(info, 0);
  CHECK_EQ(cublasSgelsBatched(h, kN, 2, 4, 1, nullptr, 2, nullptr, 2, &info, nullptr, 2), CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK_EQ(cublasSgelsBatched(h, kT, 4, 2, 1, nullptr, 4, nullptr, 4, &info, nullptr, 2), CUBLAS_STATUS_NOT_SUPPORTED);
}

// Copies into device memory are dropped; copies out give zeros.
void transfer_checks() {
  float host[8];
  memset(host, 0xff, sizeof host);
  CHECK_EQ(cublasGetVectorAsync(4, 4, kDev, 1, host, 2, nullptr), CUBLAS_STATUS_SUCCESS);
  CHECK(host[0] == 0.0f && host[2] == 0.0f && host[6] == 0.0f);
  CHECK(host[1] != 0.0f && host[7] != 0.0f);  // the stride's gaps untouched
  CHECK_EQ(cublasGetVectorAsync(4, 0, kDev, 1, host, 1, nullptr), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasGetVectorAsync(0, 4, nullptr, 1, nullptr, 1, nullptr), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasGetVectorAsync(4, 4, kDev, 1, nullptr, 1, nullptr), CUBLAS_STATUS_INVALID_VALUE);
  memset(host, 0xff, sizeof host);
  CHECK_EQ(cublasGetMatrixAsync(2, 2, 4, kDev, 2, host, 4, nullptr), CUBLAS_STATUS_SUCCESS);
  CHECK(host[0] == 0.0f && host[1] == 0.0f && host[4] == 0.0f && host[5] == 0.0f);
  CHECK(host[2] != 0.0f && host[6] != 0.0f);
  CHECK_EQ(cublasSetMatrixAsync(2, -1, 4, host, 2, kDev, 2, nullptr), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSetMatrixAsync(2, 2, 4, host, 2, kDev, 2, nullptr), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasGetMatrixAsync(1 << 30, 1 << 30, 1 << 30, kDev, 1 << 30, host, 1 << 30, nullptr),
           CUBLAS_STATUS_INVALID_VALUE);  // no address space holds that
}

}  // namespace

int test_cublas_routines() {
  cublasHandle_t h = nullptr;
  CHECK_EQ(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSetWorkspace_v2(h, nullptr, 0), CUBLAS_STATUS_SUCCESS);  // no default pool here
  gemm_checks(h);
  gemm_ex_checks(h);
  level1_2_checks(h);
  level3_solver_checks(h);
  transfer_checks();
  CHECK_EQ(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
  return g_selftest_failures;
}
