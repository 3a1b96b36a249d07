// cuBLASLt's matrix layout, matmul and preference descriptors: Create,
// Init_internal, Destroy, SetAttribute, GetAttribute (lt_attributes.h).
//
// As the 13.1.1.3 library answers (ctypes, no GPU): Create with a NULL
// out-pointer is CUBLAS_STATUS_INVALID_VALUE; the create arguments are kept
// as given, never checked; Destroy(NULL) is CUBLAS_STATUS_SUCCESS;
// Init_internal with less room than the descriptor needs is
// CUBLAS_STATUS_ALLOC_FAILED. Beyond it: Destroy of a descriptor the caller
// initialized in its own storage, or of something that is no descriptor, is
// CUBLAS_STATUS_INVALID_VALUE and frees nothing (NVIDIA's would free or
// crash).
#include <new>

#include "blas/lt_attributes.h"

namespace lt = sim::blas::lt;

namespace {

template <typename Opaque>
cublasStatus_t create(Opaque** out, const lt::DescKind& kind) {
  if (out == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* d = new (std::nothrow) Opaque;
  if (d == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  lt::init(d, kind);
  lt::set_owned(d, kind, true);
  *out = d;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t init_in(void* d, size_t size, const lt::DescKind& kind) {
  if (d == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size < lt::state_bytes(kind)) return CUBLAS_STATUS_ALLOC_FAILED;
  lt::init(d, kind);
  return CUBLAS_STATUS_SUCCESS;
}

template <typename Opaque>
cublasStatus_t destroy(Opaque* d, const lt::DescKind& kind) {
  if (d == nullptr) return CUBLAS_STATUS_SUCCESS;
  if (!lt::valid(d, kind) || !lt::owned(d)) return CUBLAS_STATUS_INVALID_VALUE;
  lt::forget(d);
  delete d;
  return CUBLAS_STATUS_SUCCESS;
}

void layout_args(void* d, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld) {
  lt::put(d, lt::kMatrixLayout, CUBLASLT_MATRIX_LAYOUT_TYPE, static_cast<uint32_t>(type));
  lt::put(d, lt::kMatrixLayout, CUBLASLT_MATRIX_LAYOUT_ROWS, rows);
  lt::put(d, lt::kMatrixLayout, CUBLASLT_MATRIX_LAYOUT_COLS, cols);
  lt::put(d, lt::kMatrixLayout, CUBLASLT_MATRIX_LAYOUT_LD, static_cast<uint64_t>(ld));
}

void desc_args(void* d, cublasComputeType_t compute, cudaDataType_t scale) {
  lt::put(d, lt::kMatmulDesc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, static_cast<uint32_t>(compute));
  lt::put(d, lt::kMatmulDesc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, static_cast<uint32_t>(scale));
}

}  // namespace

// Matrix layouts.
SIM_BLAS_API cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* out, cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
  const cublasStatus_t st = create(out, lt::kMatrixLayout);
  if (st == CUBLAS_STATUS_SUCCESS) layout_args(*out, type, rows, cols, ld);
  return st;
}

SIM_BLAS_API cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t d, size_t size, cudaDataType type,
                                                              uint64_t rows, uint64_t cols, int64_t ld) {
  const cublasStatus_t st = init_in(d, size, lt::kMatrixLayout);
  if (st == CUBLAS_STATUS_SUCCESS) layout_args(d, type, rows, cols, ld);
  return st;
}

SIM_BLAS_API cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t d) {
  return destroy(d, lt::kMatrixLayout);
}

SIM_BLAS_API cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t d,
                                                             cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                                                             size_t size) {
  return lt::set(d, lt::kMatrixLayout, attr, buf, size);
}

SIM_BLAS_API cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t d,
                                                             cublasLtMatrixLayoutAttribute_t attr, void* buf,
                                                             size_t size, size_t* written) {
  return lt::get(d, lt::kMatrixLayout, attr, buf, size, written);
}

// Matmul descriptors.
SIM_BLAS_API cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* out, cublasComputeType_t compute,
                                                     cudaDataType_t scale) {
  const cublasStatus_t st = create(out, lt::kMatmulDesc);
  if (st == CUBLAS_STATUS_SUCCESS) desc_args(*out, compute, scale);
  return st;
}

SIM_BLAS_API cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t d, size_t size,
                                                            cublasComputeType_t compute, cudaDataType_t scale) {
  const cublasStatus_t st = init_in(d, size, lt::kMatmulDesc);
  if (st == CUBLAS_STATUS_SUCCESS) desc_args(d, compute, scale);
  return st;
}

SIM_BLAS_API cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) { return destroy(d, lt::kMatmulDesc); }

SIM_BLAS_API cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                                           const void* buf, size_t size) {
  return lt::set(d, lt::kMatmulDesc, attr, buf, size);
}

SIM_BLAS_API cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                                           void* buf, size_t size, size_t* written) {
  return lt::get(d, lt::kMatmulDesc, attr, buf, size, written);
}

// Heuristic search preferences.
SIM_BLAS_API cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* out) {
  return create(out, lt::kPreference);
}

SIM_BLAS_API cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t d, size_t size) {
  return init_in(d, size, lt::kPreference);
}

SIM_BLAS_API cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t d) {
  return destroy(d, lt::kPreference);
}

SIM_BLAS_API cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t d,
                                                                 cublasLtMatmulPreferenceAttributes_t attr,
                                                                 const void* buf, size_t size) {
  return lt::set(d, lt::kPreference, attr, buf, size);
}

SIM_BLAS_API cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t d,
                                                                 cublasLtMatmulPreferenceAttributes_t attr, void* buf,
                                                                 size_t size, size_t* written) {
  return lt::get(d, lt::kPreference, attr, buf, size, written);
}
