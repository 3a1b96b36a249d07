// cuBLAS Level-1 routines PyTorch imports (cuBLAS documentation, "cuBLAS
// Level-1 Function Reference"). None is computed. The reductions (amax, amin,
// asum, dot, nrm2) are CUBLAS_STATUS_INVALID_VALUE for a NULL result (their
// documented check; dot documents none and gets it too); with host scalars
// the result is written as 0, which is also what the documentation gives for
// n <= 0. The others document no argument check and only need a live handle.
#include <cstring>

#include "blas/cublas_context.h"

namespace {

cublasStatus_t reduction(cublasHandle_t h, void* result, size_t bytes) {
  const sim::blas::Call c = sim::blas::begin(h);
  if (c.status != CUBLAS_STATUS_SUCCESS) return c.status;
  if (result == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (c.host_scalars()) memset(result, 0, bytes);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t plain(cublasHandle_t h) { return sim::blas::checked_call(h, true); }

}  // namespace

#define SIM_REDUCE(NAME, T, R) \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, int, const T*, int, R* r) { return reduction(h, r, sizeof(R)); }
SIM_REDUCE(cublasIsamax_v2, float, int)
SIM_REDUCE(cublasIdamax_v2, double, int)
SIM_REDUCE(cublasIcamax_v2, cuComplex, int)
SIM_REDUCE(cublasIzamax_v2, cuDoubleComplex, int)
SIM_REDUCE(cublasIsamin_v2, float, int)
SIM_REDUCE(cublasIdamin_v2, double, int)
SIM_REDUCE(cublasIcamin_v2, cuComplex, int)
SIM_REDUCE(cublasIzamin_v2, cuDoubleComplex, int)
SIM_REDUCE(cublasSasum_v2, float, float)
SIM_REDUCE(cublasDasum_v2, double, double)
SIM_REDUCE(cublasScasum_v2, cuComplex, float)
SIM_REDUCE(cublasDzasum_v2, cuDoubleComplex, double)
SIM_REDUCE(cublasSnrm2_v2, float, float)
SIM_REDUCE(cublasDnrm2_v2, double, double)
SIM_REDUCE(cublasScnrm2_v2, cuComplex, float)
SIM_REDUCE(cublasDznrm2_v2, cuDoubleComplex, double)

#define SIM_DOT(NAME, T)                                                                                    \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, int, const T*, int, const T*, int, T* r) { \
    return reduction(h, r, sizeof(T));                                                                      \
  }
SIM_DOT(cublasSdot_v2, float)
SIM_DOT(cublasDdot_v2, double)
SIM_DOT(cublasCdotu_v2, cuComplex)
SIM_DOT(cublasCdotc_v2, cuComplex)
SIM_DOT(cublasZdotu_v2, cuDoubleComplex)
SIM_DOT(cublasZdotc_v2, cuDoubleComplex)

// y = alpha x + y; y = x; x <-> y.
#define SIM_AXPY(NAME, T) \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, int, const T*, const T*, int, T*, int) { return plain(h); }
SIM_AXPY(cublasSaxpy_v2, float)
SIM_AXPY(cublasDaxpy_v2, double)
SIM_AXPY(cublasCaxpy_v2, cuComplex)
SIM_AXPY(cublasZaxpy_v2, cuDoubleComplex)
#define SIM_COPY(NAME, CT, T) \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, int, CT*, int, T*, int) { return plain(h); }
SIM_COPY(cublasScopy_v2, const float, float)
SIM_COPY(cublasDcopy_v2, const double, double)
SIM_COPY(cublasCcopy_v2, const cuComplex, cuComplex)
SIM_COPY(cublasZcopy_v2, const cuDoubleComplex, cuDoubleComplex)
SIM_COPY(cublasSswap_v2, float, float)
SIM_COPY(cublasDswap_v2, double, double)
SIM_COPY(cublasCswap_v2, cuComplex, cuComplex)
SIM_COPY(cublasZswap_v2, cuDoubleComplex, cuDoubleComplex)

// x = alpha x (alpha's type S, x's T).
#define SIM_SCAL(NAME, S, T) \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, int, const S*, T*, int) { return plain(h); }
SIM_SCAL(cublasSscal_v2, float, float)
SIM_SCAL(cublasDscal_v2, double, double)
SIM_SCAL(cublasCscal_v2, cuComplex, cuComplex)
SIM_SCAL(cublasCsscal_v2, float, cuComplex)
SIM_SCAL(cublasZscal_v2, cuDoubleComplex, cuDoubleComplex)
SIM_SCAL(cublasZdscal_v2, double, cuDoubleComplex)

// Givens rotations: rot (c of type C, s of type S), rotm, rotg, rotmg.
#define SIM_ROT(NAME, T, C, S) \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, int, T*, int, T*, int, const C*, const S*) { return plain(h); }
SIM_ROT(cublasSrot_v2, float, float, float)
SIM_ROT(cublasDrot_v2, double, double, double)
SIM_ROT(cublasCrot_v2, cuComplex, float, cuComplex)
SIM_ROT(cublasCsrot_v2, cuComplex, float, float)
SIM_ROT(cublasZrot_v2, cuDoubleComplex, double, cuDoubleComplex)
SIM_ROT(cublasZdrot_v2, cuDoubleComplex, double, double)
#define SIM_ROTM(NAME, T) \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, int, T*, int, T*, int, const T*) { return plain(h); }
SIM_ROTM(cublasSrotm_v2, float)
SIM_ROTM(cublasDrotm_v2, double)
#define SIM_ROTG(NAME, T, C) \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, T*, T*, C*, T*) { return plain(h); }
SIM_ROTG(cublasSrotg_v2, float, float)
SIM_ROTG(cublasDrotg_v2, double, double)
SIM_ROTG(cublasCrotg_v2, cuComplex, float)
SIM_ROTG(cublasZrotg_v2, cuDoubleComplex, double)
#define SIM_ROTMG(NAME, T) \
  SIM_BLAS_API cublasStatus_t NAME(cublasHandle_t h, T*, T*, T*, const T*, T*) { return plain(h); }
SIM_ROTMG(cublasSrotmg_v2, float)
SIM_ROTMG(cublasDrotmg_v2, double)
