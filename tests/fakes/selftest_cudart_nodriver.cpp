// `selftest_cudart_nodriver <path/to/libcudart.so.13>`: loads a copy of the
// fake runtime by path from a directory that holds no libcuda.so.1 (this
// executable has no RPATH) and checks that it reports the missing driver the
// way NVIDIA's runtime does. Driven by run_without_driver.py.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstring>

#include "selftest_check.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: selftest_cudart_nodriver <libcudart.so.13>\n");
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  auto malloc_fn = reinterpret_cast<cudaError_t (*)(void**, size_t)>(dlsym(h, "cudaMalloc"));
  auto last_fn = reinterpret_cast<cudaError_t (*)()>(dlsym(h, "cudaGetLastError"));
  auto count_fn = reinterpret_cast<cudaError_t (*)(int*)>(dlsym(h, "cudaGetDeviceCount"));
  auto drv_fn = reinterpret_cast<cudaError_t (*)(int*)>(dlsym(h, "cudaDriverGetVersion"));
  auto rt_fn = reinterpret_cast<cudaError_t (*)(int*)>(dlsym(h, "cudaRuntimeGetVersion"));
  auto name_fn = reinterpret_cast<const char* (*)(cudaError_t)>(dlsym(h, "cudaGetErrorName"));
  CHECK(malloc_fn && last_fn && count_fn && drv_fn && rt_fn && name_fn);
  if (!(malloc_fn && last_fn && count_fn && drv_fn && rt_fn && name_fn)) return selftest_finish("nodriver");

  void* p = reinterpret_cast<void*>(0x1);
  CHECK_EQ(malloc_fn(&p, 16), cudaErrorInsufficientDriver);
  CHECK_EQ(last_fn(), cudaErrorInsufficientDriver);
  CHECK_EQ(last_fn(), cudaSuccess);
  int n = 7;
  CHECK_EQ(count_fn(&n), cudaErrorInsufficientDriver);
  CHECK_EQ(n, 0);
  int v = 7;
  CHECK_EQ(drv_fn(&v), cudaSuccess);
  CHECK_EQ(v, 0);
  CHECK_EQ(rt_fn(&v), cudaSuccess);
  CHECK_EQ(v, 13000);
  CHECK(strcmp(name_fn(cudaErrorInsufficientDriver), "cudaErrorInsufficientDriver") == 0);
  CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == nullptr);
  return selftest_finish("selftest_cudart_nodriver");
}
