#include "blas/cublas_context.h"

#include <new>
#include <unordered_map>

namespace sim::blas {
namespace {

std::mutex g_mu;
// Never destroyed: handles may be used from other libraries' exit handlers
// (PyTorch never destroys its handles: CublasHandlePool.cpp, the pool is
// leaked on purpose).
auto* g_live = new std::unordered_map<const void*, std::shared_ptr<Context>>();

}  // namespace

std::shared_ptr<Context> find(cublasHandle_t handle) {
  if (handle == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  const auto it = g_live->find(handle);
  return it != g_live->end() ? it->second : nullptr;
}

bool add(cublasHandle_t handle) {
  std::shared_ptr<Context> ctx(new (std::nothrow) Context);
  if (ctx == nullptr) return false;
  std::lock_guard<std::mutex> lock(g_mu);
  (*g_live)[handle] = std::move(ctx);
  return true;
}

bool remove(cublasHandle_t handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_live->erase(handle) != 0;
}

Call begin(cublasHandle_t handle) {
  Call c;
  const std::shared_ptr<Context> ctx = find(handle);
  if (ctx == nullptr) return c;
  std::lock_guard<std::mutex> lock(ctx->mu);
  c.settings = ctx->settings;
  c.status = CUBLAS_STATUS_SUCCESS;
  return c;
}

cublasStatus_t checked_call(cublasHandle_t handle, bool ok) {
  if (find(handle) == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

}  // namespace sim::blas
