// The simulated driver as the NCCL self-tests probe it.
#include <dlfcn.h>

#include <cuda.h>

#include "selftest_nccl.h"

namespace {

void* driver() {
  static void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  return h;
}

template <typename F>
F sym(const char* name) {
  return driver() != nullptr ? reinterpret_cast<F>(dlsym(driver(), name)) : nullptr;
}

}  // namespace

uint64_t live_bytes(int device) {
  auto fn = sym<unsigned long long (*)(int)>("fakegpu_cuda_live_bytes");
  return fn != nullptr ? fn(device) : 0;
}

bool set_device(int device) {
  auto init = sym<CUresult (*)(unsigned)>("cuInit");
  auto retain = sym<CUresult (*)(CUcontext*, CUdevice)>("cuDevicePrimaryCtxRetain");
  auto set = sym<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  CUcontext ctx = nullptr;
  return init != nullptr && init(0) == CUDA_SUCCESS && retain(&ctx, device) == CUDA_SUCCESS &&
         set(ctx) == CUDA_SUCCESS;
}

uint64_t free_bytes(int device) {
  auto info = sym<CUresult (*)(size_t*, size_t*)>("cuMemGetInfo_v2");
  size_t free = 0, total = 0;
  if (!set_device(device) || info == nullptr || info(&free, &total) != CUDA_SUCCESS) return 0;
  return free;
}
