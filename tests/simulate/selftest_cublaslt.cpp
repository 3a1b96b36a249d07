// cuBLASLt (simulate/blas/lt_*): a cuBLAS handle used as a cuBLASLt handle,
// as PyTorch does; descriptors that keep their attributes with NVIDIA's sizes
// and defaults; the heuristic's result; cublasLtMatmul's documented checks;
// the algorithm configuration.
#include <cstring>

#include "selftest_blas.h"
#include "selftest_check.h"

namespace {

char* const kDev = reinterpret_cast<char*>(0x100000010000ull);  // 256-aligned device address

struct Layouts {
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
};

// PyTorch's gemm_and_bias shape (CUDABlas.cpp): op(A) m x k with A
// transposed (stored k x m), B k x n, C m x n; bf16.
Layouts make_layouts(uint64_t m, uint64_t n, uint64_t k) {
  Layouts l;
  CHECK_EQ(cublasLtMatrixLayoutCreate(&l.a, CUDA_R_16BF, k, m, static_cast<int64_t>(k)), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatrixLayoutCreate(&l.b, CUDA_R_16BF, k, n, static_cast<int64_t>(k)), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatrixLayoutCreate(&l.c, CUDA_R_16BF, m, n, static_cast<int64_t>(m)), CUBLAS_STATUS_SUCCESS);
  return l;
}

void destroy(Layouts& l) {
  CHECK_EQ(cublasLtMatrixLayoutDestroy(l.a), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatrixLayoutDestroy(l.b), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatrixLayoutDestroy(l.c), CUBLAS_STATUS_SUCCESS);
}

void descriptor_attributes() {
  cublasLtMatmulDesc_t d = nullptr;
  CHECK_EQ(cublasLtMatmulDescCreate(nullptr, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  int32_t v = -1;
  size_t written = 0;
  CHECK_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &v, 4, &written), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(v, CUBLAS_COMPUTE_32F);
  CHECK_EQ(written, 4);
  CHECK_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &v, 4, nullptr), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(v, 1);  // CUBLASLT_EPILOGUE_DEFAULT
  CHECK_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &v, 4, nullptr), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(v, -1);
  CHECK_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_FAST_ACCUM, nullptr, 0, &written),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(written, 1);  // int8_t
  CHECK_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr, 0, &written),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(written, 8);
  CHECK_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr, 0, nullptr),
           CUBLAS_STATUS_INVALID_VALUE);
  const void* bias = kDev;
  CHECK_EQ(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
           CUBLAS_STATUS_SUCCESS);
  const void* back = nullptr;
  CHECK_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &back, 8, nullptr),
           CUBLAS_STATUS_SUCCESS);
  CHECK(back == bias);
  const int32_t seven = 7;  // stored as given: cublasLtMatmul decides
  CHECK_EQ(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &seven, 4), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &seven, 8), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, nullptr, 4), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasLtMatmulDescSetAttribute(d, static_cast<cublasLtMatmulDescAttributes_t>(9), &seven, 4),
           CUBLAS_STATUS_INVALID_VALUE);
  char big[16];
  CHECK_EQ(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, big, sizeof big, nullptr),
           CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasLtMatmulDescSetAttribute(nullptr, CUBLASLT_MATMUL_DESC_TRANSA, &seven, 4), CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatmulDescOpaque_t never_made;  // no descriptor: refused, never written
  memset(&never_made, 0, sizeof never_made);
  CHECK_EQ(cublasLtMatmulDescSetAttribute(&never_made, CUBLASLT_MATMUL_DESC_TRANSA, &seven, 4),
           CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasLtMatmulDescDestroy(&never_made), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasLtMatmulDescDestroy(d), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatmulDescDestroy(nullptr), CUBLAS_STATUS_SUCCESS);
}

void layout_and_preference_attributes() {
  cublasLtMatrixLayout_t l = nullptr;
  CHECK_EQ(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 3, 5, 7), CUBLAS_STATUS_SUCCESS);
  uint64_t rows = 0;
  int32_t batch = 0;
  CHECK_EQ(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, 8, nullptr), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(rows, 3);
  CHECK_EQ(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4, nullptr),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(batch, 1);
  const int64_t stride = 1 << 20;
  CHECK_EQ(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, 8),
           CUBLAS_STATUS_SUCCESS);
  int64_t got = 0;
  CHECK_EQ(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &got, 8, nullptr),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(got, stride);
  CHECK_EQ(cublasLtMatrixLayoutDestroy(l), CUBLAS_STATUS_SUCCESS);
  // In the caller's storage: usable, but not the library's to free.
  cublasLtMatrixLayoutOpaque_t mine;
  CHECK_EQ(cublasLtMatrixLayoutInit_internal(&mine, 32, CUDA_R_32F, 2, 2, 2), CUBLAS_STATUS_ALLOC_FAILED);
  CHECK_EQ(cublasLtMatrixLayoutInit_internal(&mine, sizeof mine, CUDA_R_32F, 2, 2, 2), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatrixLayoutGetAttribute(&mine, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, 8, nullptr),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(rows, 2);
  CHECK_EQ(cublasLtMatrixLayoutDestroy(&mine), CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatmulPreference_t p = nullptr;
  CHECK_EQ(cublasLtMatmulPreferenceCreate(&p), CUBLAS_STATUS_SUCCESS);
  uint32_t align = 0;
  uint64_t ws = 1;
  CHECK_EQ(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align, 4, nullptr),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(align, 256);
  CHECK_EQ(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, 8, nullptr),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(ws, 0);  // "default: 0 - no workspace allowed"
  CHECK_EQ(cublasLtMatmulPreferenceDestroy(p), CUBLAS_STATUS_SUCCESS);
}

// The heuristic, with the cuBLAS handle cast (CublasHandlePool.cpp).
void heuristic_and_matmul(cublasHandle_t blas) {
  auto h = reinterpret_cast<cublasLtHandle_t>(blas);
  cublasLtMatmulDesc_t op = nullptr;
  CHECK_EQ(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  const int32_t t = CUBLAS_OP_T;
  CHECK_EQ(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, 4), CUBLAS_STATUS_SUCCESS);
  Layouts l = make_layouts(64, 32, 16);
  cublasLtMatmulPreference_t pref = nullptr;
  CHECK_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
  const uint64_t max_ws = 1 << 20;
  CHECK_EQ(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, 8),
           CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t res[2] = {};
  int n = -1;
  CHECK_EQ(cublasLtMatmulAlgoGetHeuristic(h, op, l.a, l.b, l.c, l.c, pref, 2, res, &n), CUBLAS_STATUS_SUCCESS);
  CHECK(n >= 1);
  CHECK_EQ(res[0].state, CUBLAS_STATUS_SUCCESS);
  CHECK(res[0].workspaceSize <= max_ws);
  CHECK_EQ(cublasLtMatmulAlgoGetHeuristic(h, op, l.a, l.b, l.c, l.c, pref, 0, res, &n), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasLtMatmulAlgoGetHeuristic(nullptr, op, l.a, l.b, l.c, l.c, pref, 1, res, &n),
           CUBLAS_STATUS_NOT_INITIALIZED);
  // "If Cdesc is omitted, this function assumes it to be equal to Ddesc."
  CHECK_EQ(cublasLtMatmulAlgoGetHeuristic(h, op, l.a, l.b, nullptr, l.c, pref, 1, res, &n), CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f;
  CHECK_EQ(cublasLtMatmul(h, op, &one, kDev, l.a, kDev, l.b, &one, kDev, l.c, kDev, l.c, &res[0].algo, kDev, max_ws,
                          nullptr),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatmul(h, op, &one, kDev, l.a, kDev, l.b, &one, kDev, l.c, kDev, l.c, nullptr, kDev + 16, max_ws,
                          nullptr),
           CUBLAS_STATUS_INVALID_VALUE);  // workspace not 256-byte aligned
  CHECK_EQ(cublasLtMatmul(h, op, nullptr, kDev, l.a, kDev, l.b, &one, kDev, l.c, kDev, l.c, nullptr, nullptr, 0,
                          nullptr),
           CUBLAS_STATUS_INVALID_VALUE);  // alpha NULL
  // op(A) is m x k only with A transposed: without TRANSA the shapes disagree.
  const int32_t no = CUBLAS_OP_N;
  CHECK_EQ(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &no, 4), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatmulAlgoGetHeuristic(h, op, l.a, l.b, l.c, l.c, pref, 1, res, &n), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasLtMatmul(h, op, &one, kDev, l.a, kDev, l.b, &one, kDev, l.c, kDev, l.c, nullptr, nullptr, 0, nullptr),
           CUBLAS_STATUS_INVALID_VALUE);
  destroy(l);
  CHECK_EQ(cublasLtMatmulPreferenceDestroy(pref), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatmulDescDestroy(op), CUBLAS_STATUS_SUCCESS);
}

void algo_config(cublasLtHandle_t h) {
  cublasLtMatmulAlgo_t algo;
  memset(&algo, 0xab, sizeof algo);
  CHECK_EQ(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                  CUDA_R_16BF, 0, &algo),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                  CUDA_R_16BF, 1, &algo),
           CUBLAS_STATUS_INVALID_VALUE);  // the simulation has one algorithm, id 0
  int ids[4] = {-1, -1, -1, -1}, count = 0;
  CHECK_EQ(cublasLtMatmulAlgoGetIds(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                    CUDA_R_16BF, 4, ids, &count),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(count, 1);
  CHECK_EQ(ids[0], 0);
  const uint32_t tile = 15;
  CHECK_EQ(cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, 4), CUBLAS_STATUS_SUCCESS);
  uint32_t back = 0;
  CHECK_EQ(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &back, 4, nullptr),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(back, 15);
  const int32_t id = 0;
  CHECK_EQ(cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, 4), CUBLAS_STATUS_INVALID_VALUE);
  size_t written = 0;
  CHECK_EQ(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, nullptr, 0, &written),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(written, 2);  // uint16_t
  CHECK_EQ(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, nullptr, 0, nullptr),
           CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatmulDesc_t op = nullptr;
  CHECK_EQ(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  Layouts l;
  CHECK_EQ(cublasLtMatrixLayoutCreate(&l.a, CUDA_R_32F, 8, 4, 8), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatrixLayoutCreate(&l.b, CUDA_R_32F, 4, 2, 4), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtMatrixLayoutCreate(&l.c, CUDA_R_32F, 8, 2, 8), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t res;
  memset(&res, 0xcd, sizeof res);
  CHECK_EQ(cublasLtMatmulAlgoCheck(h, op, l.a, l.b, l.c, l.c, &algo, &res), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(res.state, CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(res.workspaceSize, 0);
  CHECK_EQ(static_cast<unsigned char>(res.algo.data[0]), 0xcd);  // "algo field is never updated"
  destroy(l);
  CHECK_EQ(cublasLtMatmulDescDestroy(op), CUBLAS_STATUS_SUCCESS);
}

}  // namespace

int test_cublaslt() {
  descriptor_attributes();
  layout_and_preference_attributes();
  cublasHandle_t blas = nullptr;
  CHECK_EQ(cublasCreate_v2(&blas), CUBLAS_STATUS_SUCCESS);
  heuristic_and_matmul(blas);
  CHECK_EQ(cublasDestroy_v2(blas), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t res;
  int n = 0;
  CHECK_EQ(cublasLtMatmulAlgoGetHeuristic(reinterpret_cast<cublasLtHandle_t>(blas), nullptr, nullptr, nullptr,
                                          nullptr, nullptr, nullptr, 1, &res, &n),
           CUBLAS_STATUS_NOT_INITIALIZED);  // a destroyed cuBLAS handle is no cuBLASLt handle either
  cublasLtHandle_t lt = nullptr;
  CHECK_EQ(cublasLtCreate(nullptr), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  algo_config(lt);
  CHECK_EQ(cublasLtDestroy(lt), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasLtDestroy(nullptr), CUBLAS_STATUS_INVALID_VALUE);
  return g_selftest_failures;
}
