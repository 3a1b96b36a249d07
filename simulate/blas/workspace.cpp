#include "blas/workspace.h"

#include "blas/driver_link.h"
#include "core/config.h"

namespace sim::blas {

size_t default_pool_bytes() {
  constexpr size_t MiB = 1u << 20;
  const Profile* p = config().profile;
  const int major = p != nullptr ? p->cc_major : 0;
  return major == 9 || major == 10 || major == 12 ? 32 * MiB : 4 * MiB;
}

cublasStatus_t run_with_workspace(const Call& call) {
  if (call.settings.user_workspace) return CUBLAS_STATUS_SUCCESS;
  const DriverCalls* d = driver();
  if (d == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto stream = static_cast<CUstream>(call.settings.stream);
  CUdeviceptr p = 0;
  const CUresult r = d->mem_alloc_async(&p, default_pool_bytes(), stream);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return CUBLAS_STATUS_ALLOC_FAILED;
  if (r != CUDA_SUCCESS) return CUBLAS_STATUS_EXECUTION_FAILED;
  d->mem_free_async(p, stream);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace sim::blas
