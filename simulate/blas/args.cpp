#include "blas/args.h"

#include <cstring>

namespace sim::blas {
namespace {

template <typename T>
T load(const void* p) {
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

bool scalar_zero(const void* p, Scalar kind) {
  switch (kind) {
    case Scalar::F16:
    case Scalar::BF16: return (load<uint16_t>(p) & 0x7fffu) == 0;  // sign bit aside
    case Scalar::F32: return load<float>(p) == 0.0f;
    case Scalar::F64: return load<double>(p) == 0.0;
    case Scalar::C32: return load<float>(p) == 0.0f && load<float>(static_cast<const float*>(p) + 1) == 0.0f;
    case Scalar::C64: return load<double>(p) == 0.0 && load<double>(static_cast<const double*>(p) + 1) == 0.0;
    case Scalar::I32: return load<int32_t>(p) == 0;
  }
  return false;
}

bool gemm_shape_ok(const GemmShape& s) {
  if (s.m < 0 || s.n < 0 || s.k < 0 || !op_ok(s.transa) || !op_ok(s.transb)) return false;
  const int need_a = s.transa == CUBLAS_OP_N ? max1(s.m) : max1(s.k);
  const int need_b = s.transb == CUBLAS_OP_N ? max1(s.k) : max1(s.n);
  return s.lda >= need_a && s.ldb >= need_b && s.ldc >= max1(s.m);
}

cublasStatus_t gemm_scalars_ok(bool host_scalars, const void* alpha, const void* beta, const void* C, Scalar kind) {
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (host_scalars && C == nullptr && !scalar_zero(beta, kind)) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace sim::blas
