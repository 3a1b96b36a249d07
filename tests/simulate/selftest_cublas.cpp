// Self-test of the simulated libcublas.so.13 and libcublasLt.so.13.
//
// `selftest_cublas POOL_MIB` runs every group against the simulated driver;
// POOL_MIB is the default workspace the card under test takes (32 on
// GPUMEMREC_SIMULATE=h100-80gb, 4 on the plain Fake GPU). Expected values
// are NVIDIA's documented ones, or the wheel's library's where it answers
// without a GPU (cited in simulate/blas/).
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "selftest_blas.h"
#include "selftest_check.h"

const DriverProbe& driver_probe() {
  static DriverProbe p = [] {
    DriverProbe d;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) return d;
    d.live_bytes = reinterpret_cast<unsigned long long (*)(int)>(dlsym(h, "fakegpu_cuda_live_bytes"));
    d.process_bytes = reinterpret_cast<unsigned long long (*)(int)>(dlsym(h, "fakegpu_cuda_process_bytes"));
    d.mem_alloc = reinterpret_cast<int (*)(unsigned long long*, size_t)>(dlsym(h, "cuMemAlloc_v2"));
    d.mem_free = reinterpret_cast<int (*)(unsigned long long)>(dlsym(h, "cuMemFree_v2"));
    d.mem_get_info = reinterpret_cast<int (*)(size_t*, size_t*)>(dlsym(h, "cuMemGetInfo_v2"));
    d.synchronize = reinterpret_cast<int (*)()>(dlsym(h, "cuCtxSynchronize"));
    return d;
  }();
  return p;
}

namespace {

void versions_and_names() {
  int v = 0;
  CHECK_EQ(cublasGetVersion_v2(nullptr, &v), CUBLAS_STATUS_SUCCESS);  // no handle needed
  CHECK_EQ(v, 130101);
  CHECK_EQ(cublasGetVersion_v2(nullptr, nullptr), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasGetProperty(MAJOR_VERSION, &v), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(v, 13);
  CHECK_EQ(cublasGetProperty(MINOR_VERSION, &v), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(v, 1);
  CHECK_EQ(cublasGetProperty(PATCH_LEVEL, &v), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(v, 1);
  CHECK_EQ(cublasGetProperty(static_cast<libraryPropertyType>(3), &v), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasGetCudartVersion(), 13000);
  CHECK_EQ(cublasLtGetVersion(), 130101);
  CHECK_EQ(cublasLtGetCudartVersion(), 13000);
  CHECK(strcmp(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE") == 0);
  CHECK(strcmp(cublasGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED), "the requested functionality is not supported") ==
        0);
  CHECK(strcmp(cublasGetStatusName(static_cast<cublasStatus_t>(2)), "unrecognized status") == 0);
  CHECK(strcmp(cublasLtGetStatusName(static_cast<cublasStatus_t>(-5)), "unrecognized status") == 0);
}

void handles() {
  CHECK_EQ(cublasCreate_v2(nullptr), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasDestroy_v2(nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  cublasHandle_t h = nullptr;
  CHECK_EQ(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
  CHECK(h != nullptr);
  cublasHandle_t h2 = nullptr;
  CHECK_EQ(cublasCreate_v2(&h2), CUBLAS_STATUS_SUCCESS);
  CHECK(h2 != h);
  CHECK_EQ(cublasDestroy_v2(h2), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasDestroy_v2(h2), CUBLAS_STATUS_NOT_INITIALIZED);  // destroyed: no longer a handle
  CHECK_EQ(cublasSetStream_v2(h2, nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  int bogus = 0;
  auto fake = reinterpret_cast<cublasHandle_t>(&bogus);  // never made by cublasCreate
  CHECK_EQ(cublasSetMathMode(fake, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_NOT_INITIALIZED);
  float one = 1.0f;
  CHECK_EQ(cublasSgemm_v2(fake, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, nullptr, 1, nullptr, 1, &one, nullptr, 1),
           CUBLAS_STATUS_NOT_INITIALIZED);
  CHECK_EQ(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

// Every cublasSet* keeps what it is given, and its cublasGet* returns it.
void settings() {
  cublasHandle_t h = nullptr;
  CHECK_EQ(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(0x1234);
  CHECK_EQ(cublasGetStream_v2(h, &s), CUBLAS_STATUS_SUCCESS);
  CHECK(s == nullptr);  // default: the NULL stream
  CHECK_EQ(cublasSetStream_v2(h, reinterpret_cast<cudaStream_t>(0x5000)), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasGetStream_v2(h, &s), CUBLAS_STATUS_SUCCESS);
  CHECK(s == reinterpret_cast<cudaStream_t>(0x5000));
  CHECK_EQ(cublasGetStream_v2(h, nullptr), CUBLAS_STATUS_INVALID_VALUE);
  cublasPointerMode_t pm = CUBLAS_POINTER_MODE_DEVICE;
  CHECK_EQ(cublasGetPointerMode_v2(h, &pm), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(pm, CUBLAS_POINTER_MODE_HOST);
  CHECK_EQ(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasGetPointerMode_v2(h, &pm), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(pm, CUBLAS_POINTER_MODE_DEVICE);
  CHECK_EQ(cublasSetPointerMode_v2(h, static_cast<cublasPointerMode_t>(2)), CUBLAS_STATUS_INVALID_VALUE);
  cublasMath_t mm = CUBLAS_PEDANTIC_MATH;
  CHECK_EQ(cublasGetMathMode(h, &mm), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(mm, CUBLAS_DEFAULT_MATH);
  CHECK_EQ(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
  const auto flagged = static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  CHECK_EQ(cublasSetMathMode(h, flagged), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasGetMathMode(h, &mm), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(mm, flagged);
  CHECK_EQ(cublasSetMathMode(h, static_cast<cublasMath_t>(5)), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasGetMathMode(h, nullptr), CUBLAS_STATUS_INVALID_VALUE);
  cublasAtomicsMode_t am = CUBLAS_ATOMICS_ALLOWED;
  CHECK_EQ(cublasGetAtomicsMode(h, &am), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(am, CUBLAS_ATOMICS_NOT_ALLOWED);
  CHECK_EQ(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_ALLOWED), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasGetAtomicsMode(h, &am), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(am, CUBLAS_ATOMICS_ALLOWED);
  int sm = -1;
  CHECK_EQ(cublasGetSmCountTarget(h, &sm), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(sm, 0);
  CHECK_EQ(cublasSetSmCountTarget(h, 100), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasGetSmCountTarget(h, &sm), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(sm, 100);
  CHECK_EQ(cublasSetSmCountTarget(h, -1), CUBLAS_STATUS_INVALID_VALUE);
  if (getenv("GPUMEMREC_SIMULATE") != nullptr)  // h100-80gb: 132 SMs
    CHECK_EQ(cublasSetSmCountTarget(h, 133), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSetWorkspace_v2(h, reinterpret_cast<void*>(0x100000000100ull), 1 << 20), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSetWorkspace_v2(h, reinterpret_cast<void*>(0x100000000080ull), 1 << 20), CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSetWorkspace_v2(h, nullptr, 0), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
}

}  // namespace

int test_cublas_helpers() {
  versions_and_names();
  handles();
  settings();
  return g_selftest_failures;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: selftest_cublas POOL_MIB\n");
    return 2;
  }
  const uint64_t pool = strtoull(argv[1], nullptr, 10) << 20;
  int failures = test_cublas_helpers();
  failures += test_cublas_routines();
  failures += test_cublas_workspace(pool);
  failures += test_cublaslt();
  failures += test_cublas_threads();
  g_selftest_failures = failures;
  return selftest_finish("selftest_cublas");
}
