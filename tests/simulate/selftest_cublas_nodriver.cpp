// `selftest_cublas_nodriver <path/to/libcublas.so.13>`: loads a copy of the
// simulated cuBLAS (libcublasLt.so.13 beside it) from a directory without a
// libcuda.so.1 (this program has no RUNPATH) and checks what NVIDIA's
// library does there (the 13.1.1.3 wheel's, run with ctypes on a machine
// without a GPU): handles cannot be made (CUBLAS_STATUS_NOT_INITIALIZED),
// while what needs no device answers. Driven by
// tests/fakes/run_without_driver.py.
#include <dlfcn.h>

#include "selftest_blas.h"
#include "selftest_check.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: selftest_cublas_nodriver <libcublas.so.13>\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  auto create = reinterpret_cast<decltype(&cublasCreate_v2)>(dlsym(lib, "cublasCreate_v2"));
  auto version = reinterpret_cast<decltype(&cublasGetVersion_v2)>(dlsym(lib, "cublasGetVersion_v2"));
  void* lt = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_NOLOAD);  // loaded as libcublas's DT_NEEDED
  auto lt_create = lt ? reinterpret_cast<decltype(&cublasLtCreate)>(dlsym(lt, "cublasLtCreate")) : nullptr;
  auto layout = lt ? reinterpret_cast<decltype(&cublasLtMatrixLayoutCreate)>(dlsym(lt, "cublasLtMatrixLayoutCreate"))
                   : nullptr;
  CHECK(create && version && lt_create && layout);
  if (!(create && version && lt_create && layout)) return selftest_finish("selftest_cublas_nodriver");
  cublasHandle_t h = nullptr;
  CHECK_EQ(create(&h), CUBLAS_STATUS_NOT_INITIALIZED);
  CHECK_EQ(create(nullptr), CUBLAS_STATUS_INVALID_VALUE);
  cublasLtHandle_t l = nullptr;
  CHECK_EQ(lt_create(&l), CUBLAS_STATUS_NOT_INITIALIZED);
  int v = 0;
  CHECK_EQ(version(nullptr, &v), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(v, 130101);
  cublasLtMatrixLayout_t m = nullptr;
  CHECK_EQ(layout(&m, CUDA_R_32F, 2, 2, 2), CUBLAS_STATUS_SUCCESS);
  CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == nullptr);
  return selftest_finish("selftest_cublas_nodriver");
}
