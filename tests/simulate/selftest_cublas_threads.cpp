// Many threads at once: each makes its handles, sets them up as PyTorch does
// on every fetch (CublasHandlePool.cpp: cublasSetStream, cublasSetWorkspace,
// cublasSetMathMode) and multiplies, while others destroy handles that one
// shared thread keeps using: every call answers SUCCESS or, once its handle
// is gone, NOT_INITIALIZED; nothing crashes, nothing is left registered.
#include <atomic>
#include <thread>
#include <vector>

#include "selftest_blas.h"
#include "selftest_check.h"

namespace {

constexpr int kThreads = 8;
constexpr int kRounds = 200;
float* const kDev = reinterpret_cast<float*>(0x100000001000ull);

void worker(std::atomic<int>* bad) {
  const float one = 1.0f;
  for (int i = 0; i < kRounds; ++i) {
    cublasHandle_t h = nullptr;
    if (cublasCreate_v2(&h) != CUBLAS_STATUS_SUCCESS) {
      ++*bad;
      continue;
    }
    const bool ok = cublasSetStream_v2(h, nullptr) == CUBLAS_STATUS_SUCCESS &&
                    cublasSetWorkspace_v2(h, kDev, 1 << 22) == CUBLAS_STATUS_SUCCESS &&
                    cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS &&
                    cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, kDev, 8, kDev, 8, &one, kDev, 8) ==
                        CUBLAS_STATUS_SUCCESS &&
                    cublasDestroy_v2(h) == CUBLAS_STATUS_SUCCESS;
    if (!ok) ++*bad;
  }
}

// Uses `shared` until it is destroyed under it.
void user(cublasHandle_t shared, std::atomic<bool>* stop, std::atomic<int>* bad) {
  const float one = 1.0f;
  while (!stop->load()) {
    const cublasStatus_t st =
        cublasSgemm_v2(shared, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, kDev, 8, kDev, 8, &one, kDev, 8);
    if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_INITIALIZED) ++*bad;
  }
}

}  // namespace

int test_cublas_threads() {
  std::atomic<int> bad{0};
  std::atomic<bool> stop{false};
  cublasHandle_t shared = nullptr;
  CHECK_EQ(cublasCreate_v2(&shared), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSetWorkspace_v2(shared, kDev, 1 << 22), CUBLAS_STATUS_SUCCESS);
  std::thread u(user, shared, &stop, &bad);
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) ts.emplace_back(worker, &bad);
  CHECK_EQ(cublasDestroy_v2(shared), CUBLAS_STATUS_SUCCESS);  // while `u` multiplies with it
  for (std::thread& t : ts) t.join();
  stop = true;
  u.join();
  CHECK_EQ(bad.load(), 0);
  float one = 1.0f;
  CHECK_EQ(cublasSgemm_v2(shared, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, kDev, 8, kDev, 8, &one, kDev, 8),
           CUBLAS_STATUS_NOT_INITIALIZED);
  return g_selftest_failures;
}
