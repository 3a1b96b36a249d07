// cuBLAS handles (libcublas.so.13): each is a cuBLASLt handle (cublasLtCreate)
// with the cuBLAS settings kept beside it, so that the handle casts to a
// cublasLtHandle_t as NVIDIA documents (lt_handles.h).
#pragma once

#include <memory>
#include <mutex>

#include "blas/types.h"

namespace sim::blas {

// What cublasSet* changes. Defaults: cuBLAS documentation, cublasCreate and
// the cublasSet* functions (NULL stream, the default workspace pool, host
// pointer mode, atomics not allowed, CUBLAS_DEFAULT_MATH, SM count 0).
struct Settings {
  cudaStream_t stream = nullptr;
  bool user_workspace = false;  // cublasSetWorkspace since the last cublasSetStream
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasAtomicsMode_t atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  int sm_count_target = 0;
};

struct Context {
  std::mutex mu;
  Settings settings;
};

// The context of a live handle, or nullptr (NULL, never made, destroyed).
std::shared_ptr<Context> find(cublasHandle_t handle);

// Registers a new handle (an Lt handle made by the caller).
bool add(cublasHandle_t handle);
// Unregisters it; false if it was not live.
bool remove(cublasHandle_t handle);

// A compute call's start: the handle's settings at the call, or
// CUBLAS_STATUS_NOT_INITIALIZED for a handle that is not live.
struct Call {
  cublasStatus_t status = CUBLAS_STATUS_NOT_INITIALIZED;
  Settings settings;
  bool host_scalars() const { return settings.pointer_mode == CUBLAS_POINTER_MODE_HOST; }
};
Call begin(cublasHandle_t handle);

// A routine whose whole check is `ok`: CUBLAS_STATUS_NOT_INITIALIZED for a
// handle that is not live, else CUBLAS_STATUS_INVALID_VALUE unless `ok`.
cublasStatus_t checked_call(cublasHandle_t handle, bool ok);

// Runs `change` on the handle's settings under its lock; `change` returns
// the status. CUBLAS_STATUS_NOT_INITIALIZED for a handle that is not live.
template <typename F>
cublasStatus_t with_settings(cublasHandle_t handle, F change) {
  const std::shared_ptr<Context> ctx = find(handle);
  if (ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(ctx->mu);
  return change(ctx->settings);
}

// cublasGet*: the setting `field` into *out (NULL out: CUBLAS_STATUS_INVALID_VALUE).
template <typename T>
cublasStatus_t read_setting(cublasHandle_t handle, T Settings::*field, T* out) {
  return with_settings(handle, [&](Settings& s) {
    if (out == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *out = s.*field;
    return CUBLAS_STATUS_SUCCESS;
  });
}

// cublasSet*: stores `value` when `ok` (else CUBLAS_STATUS_INVALID_VALUE).
template <typename T>
cublasStatus_t write_setting(cublasHandle_t handle, T Settings::*field, T value, bool ok) {
  return with_settings(handle, [&](Settings& s) {
    if (!ok) return CUBLAS_STATUS_INVALID_VALUE;
    s.*field = value;
    return CUBLAS_STATUS_SUCCESS;
  });
}

}  // namespace sim::blas
