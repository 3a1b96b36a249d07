#include "blas/driver_link.h"

#include <dlfcn.h>

#include <mutex>

namespace sim::blas {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

// One entry point at the version NVIDIA's runtime asks for it (the ABI:
// cuMemAllocAsync appeared in 11.2).
template <typename F>
bool entry(GetProcAddress gpa, const char* name, int version, F* out) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (gpa(name, &p, version, 0, &st) != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || p == nullptr) return false;
  *out = reinterpret_cast<F>(p);
  return true;
}

bool link(DriverCalls* d) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) return false;
  auto first = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  GetProcAddress gpa = nullptr;
  if (first == nullptr || !entry(first, "cuGetProcAddress", 12000, &gpa)) return false;
  CUresult (*init)(unsigned int) = nullptr;
  if (!entry(gpa, "cuInit", 2000, &init) || !entry(gpa, "cuCtxGetDevice", 2000, &d->ctx_get_device) ||
      !entry(gpa, "cuMemAllocAsync", 11020, &d->mem_alloc_async) ||
      !entry(gpa, "cuMemFreeAsync", 11020, &d->mem_free_async))
    return false;
  return init(0) == CUDA_SUCCESS;
}

}  // namespace

const DriverCalls* driver() {
  static DriverCalls calls;
  static bool ok = false;
  static std::once_flag once;
  std::call_once(once, [] { ok = link(&calls); });
  return ok ? &calls : nullptr;
}

}  // namespace sim::blas
