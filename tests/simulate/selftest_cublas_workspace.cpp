// The device memory the simulated cuBLAS takes by itself (simulate/blas/
// workspace.h): nothing at cublasCreate; the default workspace pool, through
// the driver's stream-ordered allocator, for a GEMM with work to do on a
// handle without a workspace of the caller's; nothing once the caller set
// one (even of 0 bytes), again after cublasSetStream resets it;
// CUBLAS_STATUS_ALLOC_FAILED when the card has not that much free.
#include "selftest_blas.h"
#include "selftest_check.h"

namespace {

float* const kDev = reinterpret_cast<float*>(0x100000001000ull);

cublasStatus_t gemm(cublasHandle_t h, int k = 64) {
  const float one = 1.0f;
  return cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, k, &one, kDev, 64, kDev, 64, &one, kDev, 64);
}

// Bytes the process holds on device 0 (allocations, context, pools), with
// the pools emptied first by a synchronization.
unsigned long long held_after(const DriverProbe& d, cublasHandle_t h, cublasStatus_t* st) {
  d.synchronize();
  *st = gemm(h);
  return d.process_bytes(0);
}

void pool_taken_and_given_back(const DriverProbe& d, uint64_t pool) {
  d.synchronize();
  const unsigned long long base = d.process_bytes(0), live = d.live_bytes(0);
  cublasHandle_t h = nullptr;
  CHECK_EQ(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(d.process_bytes(0), base);  // cublasCreate takes nothing
  cublasStatus_t st = CUBLAS_STATUS_INTERNAL_ERROR;
  CHECK_EQ(held_after(d, h, &st), base + pool);  // taken and given back to the driver's pool
  CHECK_EQ(st, CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(d.live_bytes(0), live);  // no allocation outlives the call
  CHECK_EQ(gemm(h), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(d.process_bytes(0), base + pool);  // the pool's bytes serve the next call
  d.synchronize();
  CHECK_EQ(gemm(h, 0), CUBLAS_STATUS_SUCCESS);  // k = 0: no product, no workspace
  CHECK_EQ(d.process_bytes(0), base);
  CHECK_EQ(cublasSetWorkspace_v2(h, nullptr, 0), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(held_after(d, h, &st), base);  // the caller's workspace (0 bytes): nothing taken
  CHECK_EQ(cublasSetStream_v2(h, nullptr), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(held_after(d, h, &st), base + pool);  // SetStream reset it to the default pool
  CHECK_EQ(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
  d.synchronize();
}

void pool_refused(const DriverProbe& d, uint64_t pool) {
  size_t free_bytes = 0, total = 0;
  CHECK_EQ(d.mem_get_info(&free_bytes, &total), 0);
  unsigned long long fill = 0;
  const size_t leave = static_cast<size_t>(pool / 2);
  if (free_bytes <= leave) return;
  CHECK_EQ(d.mem_alloc(&fill, free_bytes - leave), 0);  // address space only: no host memory
  cublasHandle_t h = nullptr;
  CHECK_EQ(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(gemm(h), CUBLAS_STATUS_ALLOC_FAILED);
  void* ws = reinterpret_cast<void*>(0x100000000000ull);
  CHECK_EQ(cublasSetWorkspace_v2(h, ws, 1 << 20), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(gemm(h), CUBLAS_STATUS_SUCCESS);  // with the caller's workspace it needs nothing
  CHECK_EQ(d.mem_free(fill), 0);
  CHECK_EQ(cublasSetStream_v2(h, nullptr), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(gemm(h), CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
  d.synchronize();
}

}  // namespace

int test_cublas_workspace(uint64_t expected_pool_bytes) {
  const DriverProbe& d = driver_probe();
  CHECK(d.live_bytes && d.process_bytes && d.mem_alloc && d.mem_free && d.mem_get_info && d.synchronize);
  if (!(d.live_bytes && d.process_bytes && d.mem_alloc && d.mem_free && d.mem_get_info && d.synchronize))
    return g_selftest_failures;
  pool_taken_and_given_back(d, expected_pool_bytes);
  pool_refused(d, expected_pool_bytes);
  return g_selftest_failures;
}
