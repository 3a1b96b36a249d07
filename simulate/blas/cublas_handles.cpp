// cuBLAS's helper functions: handles, stream, workspace, modes, versions
// (cuBLAS documentation, section "cuBLAS Helper Function Reference").
//
// Checked against the 13.1.1.3 wheel's libcublas.so.13 (ctypes, no GPU):
// cublasCreate(NULL) is CUBLAS_STATUS_INVALID_VALUE, without a driver
// CUBLAS_STATUS_NOT_INITIALIZED; cublasDestroy, cublasSetStream and
// cublasSetMathMode on a NULL handle are CUBLAS_STATUS_NOT_INITIALIZED;
// cublasGetVersion works without a handle (130101) and is
// CUBLAS_STATUS_INVALID_VALUE for a NULL version.
#include <cstdint>

#include "blas/cublas_context.h"
#include "blas/lt_api.h"
#include "blas/status.h"
#include "blas/version.h"
#include "core/config.h"

namespace blas = sim::blas;
using blas::Settings;

SIM_BLAS_API cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  cublasLtHandle_t lt = nullptr;
  if (const cublasStatus_t st = cublasLtCreate(&lt)) return st;
  auto h = reinterpret_cast<cublasHandle_t>(lt);
  if (!blas::add(h)) {
    cublasLtDestroy(lt);
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_BLAS_API cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!blas::remove(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  cublasLtDestroy(reinterpret_cast<cublasLtHandle_t>(handle));
  return CUBLAS_STATUS_SUCCESS;
}

SIM_BLAS_API cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  return blas::with_settings(handle, [&](Settings& s) {
    s.stream = stream;
    s.user_workspace = false;  // "resets the cuBLAS library workspace back to the default workspace pool"
    s.workspace = nullptr;
    s.workspace_bytes = 0;
    return CUBLAS_STATUS_SUCCESS;
  });
}

SIM_BLAS_API cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  return blas::read_setting(handle, &Settings::stream, stream);
}

// "The workspace pointer has to be aligned to at least 256 bytes, otherwise
// CUBLAS_STATUS_INVALID_VALUE error is returned."
SIM_BLAS_API cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  return blas::with_settings(handle, [&](Settings& s) {
    if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
    s.user_workspace = true;
    s.workspace = workspace;
    s.workspace_bytes = bytes;
    return CUBLAS_STATUS_SUCCESS;
  });
}

SIM_BLAS_API cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  const bool ok = mode == CUBLAS_POINTER_MODE_HOST || mode == CUBLAS_POINTER_MODE_DEVICE;
  return blas::write_setting(handle, &Settings::pointer_mode, mode, ok);
}

SIM_BLAS_API cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  return blas::read_setting(handle, &Settings::pointer_mode, mode);
}

// cublasSetAtomicsMode documents no check of the mode; a value that is no
// mode is refused all the same (it could only be a caller's mistake).
SIM_BLAS_API cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
  const bool ok = mode == CUBLAS_ATOMICS_NOT_ALLOWED || mode == CUBLAS_ATOMICS_ALLOWED;
  return blas::write_setting(handle, &Settings::atomics, mode, ok);
}

SIM_BLAS_API cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t* mode) {
  return blas::read_setting(handle, &Settings::atomics, mode);
}

// A mode is one of cublasMath_t's, optionally with
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION (cublasSetMathMode).
SIM_BLAS_API cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  const int base = mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  const bool ok = base == CUBLAS_DEFAULT_MATH || base == CUBLAS_TENSOR_OP_MATH || base == CUBLAS_PEDANTIC_MATH ||
                  base == CUBLAS_TF32_TENSOR_OP_MATH || base == CUBLAS_FP32_EMULATED_BF16X9_MATH ||
                  base == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH;
  return blas::write_setting(handle, &Settings::math, mode, ok);
}

SIM_BLAS_API cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  return blas::read_setting(handle, &Settings::math, mode);
}

// "Negative values are not accepted"; the value "should not exceed the
// device's multiprocessor count" (the simulated card's, when it has one).
SIM_BLAS_API cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int target) {
  const sim::Profile* p = sim::config().profile;
  const bool ok = target >= 0 && (p == nullptr || target <= p->sm_count);
  return blas::write_setting(handle, &Settings::sm_count_target, target, ok);
}

SIM_BLAS_API cublasStatus_t cublasGetSmCountTarget(cublasHandle_t handle, int* target) {
  return blas::read_setting(handle, &Settings::sm_count_target, target);
}

SIM_BLAS_API cublasStatus_t cublasGetVersion_v2(cublasHandle_t, int* version) {
  if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *version = blas::kVersion;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_BLAS_API cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  return blas::library_property(type, value);
}

SIM_BLAS_API const char* cublasGetStatusName(cublasStatus_t status) { return blas::status_name(status); }
SIM_BLAS_API const char* cublasGetStatusString(cublasStatus_t status) { return blas::status_string(status); }
SIM_BLAS_API size_t cublasGetCudartVersion(void) { return blas::kCudartVersion; }
