// `dnn_oom`: a program whose cuDNN runs out of device memory by itself, for
// simulate.cudnn_recorder. One cudnnCreate (its 25,344 B and 4 B through the
// driver), then the card filled to 10 KiB free and cudnnCreate again: the
// simulated cuDNN's cuMemAlloc_v2 of 25,344 B fails and cudnnCreate returns
// CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED with nothing kept.
// Prints `OOM api=cuMemAlloc_v2 size=25344 status=<cuDNN status>`.
#include <dlfcn.h>

#include <cstdio>

#include "selftest_cudnn.h"

int main() {
  cudnnHandle_t first = nullptr, second = nullptr;
  if (cudnnCreate(&first) != CUDNN_STATUS_SUCCESS) return 1;
  void* drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto get_info = drv ? reinterpret_cast<int (*)(size_t*, size_t*)>(dlsym(drv, "cuMemGetInfo_v2")) : nullptr;
  auto alloc = drv ? reinterpret_cast<int (*)(unsigned long long*, size_t)>(dlsym(drv, "cuMemAlloc_v2")) : nullptr;
  size_t free_bytes = 0, total = 0;
  if (get_info == nullptr || alloc == nullptr || get_info(&free_bytes, &total) != 0) return 1;
  unsigned long long fill = 0;
  if (alloc(&fill, free_bytes - (10u << 10)) != 0) return 1;
  const cudnnStatus_t st = cudnnCreate(&second);
  printf("OOM api=cuMemAlloc_v2 size=25344 status=%d\n", static_cast<int>(st));
  return st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED && second == nullptr ? 0 : 1;
}
