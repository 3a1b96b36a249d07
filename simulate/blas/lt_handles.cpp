// cublasLtCreate, cublasLtDestroy and the library's queries.
#include "blas/lt_handles.h"

#include <mutex>
#include <new>
#include <unordered_set>

#include "blas/driver_link.h"
#include "blas/status.h"
#include "blas/version.h"

struct cublasLtContext {
  CUdevice device;  // the current device at cublasLtCreate (cuBLAS context)
};

namespace sim::blas::lt {
namespace {

std::mutex g_mu;
// Never destroyed: handles may be used from other libraries' exit handlers.
std::unordered_set<const void*>* g_live = new std::unordered_set<const void*>();

}  // namespace

bool live(cublasLtHandle_t h) {
  if (h == nullptr) return false;
  std::lock_guard<std::mutex> lock(g_mu);
  return g_live->count(h) != 0;
}

}  // namespace sim::blas::lt

using namespace sim::blas;

// Checked against the wheel's libcublasLt.so.13 (ctypes, no GPU): a NULL
// out-pointer is CUBLAS_STATUS_INVALID_VALUE, no driver
// CUBLAS_STATUS_NOT_INITIALIZED; cublasLtDestroy(NULL) is INVALID_VALUE.
SIM_BLAS_API cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const DriverCalls* d = driver();
  CUdevice device = 0;
  if (d == nullptr || d->ctx_get_device(&device) != CUDA_SUCCESS) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* ctx = new (std::nothrow) cublasLtContext{device};
  if (ctx == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  {
    std::lock_guard<std::mutex> lock(lt::g_mu);
    lt::g_live->insert(ctx);
  }
  *handle = ctx;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_BLAS_API cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(lt::g_mu);
    if (lt::g_live->erase(handle) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_BLAS_API const char* cublasLtGetStatusName(cublasStatus_t status) { return status_name(status); }
SIM_BLAS_API const char* cublasLtGetStatusString(cublasStatus_t status) { return status_string(status); }
SIM_BLAS_API size_t cublasLtGetVersion(void) { return kVersion; }
SIM_BLAS_API size_t cublasLtGetCudartVersion(void) { return kCudartVersion; }

SIM_BLAS_API cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value) {
  return library_property(type, value);
}
