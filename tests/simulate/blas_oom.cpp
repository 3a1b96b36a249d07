// `blas_oom`: a program whose cuBLAS runs out of device memory by itself, for
// simulate.cublas_recorder. On the plain Fake GPU (4 MiB default workspace):
// one SGEMM on a handle without a workspace of the program's (the simulated
// cuBLAS takes and returns its default pool through the driver), then the card
// filled to 2 MiB free (after a synchronization: until then the driver's pool
// keeps the first call's bytes and would serve the next call from them) and
// the same SGEMM again: cuBLAS's cuMemAllocAsync fails and cublasSgemm_v2
// returns CUBLAS_STATUS_ALLOC_FAILED. Prints
// `OOM api=cuMemAllocAsync size=<pool> status=<cuBLAS status>`.
#include <cstdio>

#include "fill_card.h"
#include "selftest_blas.h"

namespace {

float* const kDev = reinterpret_cast<float*>(0x100000001000ull);

cublasStatus_t sgemm(cublasHandle_t h) {
  const float one = 1.0f;
  return cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 256, 256, 256, &one, kDev, 256, kDev, 256, &one, kDev, 256);
}

}  // namespace

int main() {
  cublasHandle_t h = nullptr;
  if (cublasCreate_v2(&h) != CUBLAS_STATUS_SUCCESS || sgemm(h) != CUBLAS_STATUS_SUCCESS) return 1;
  if (!fill_card(2u << 20)) return 1;
  const cublasStatus_t st = sgemm(h);
  printf("OOM api=cuMemAllocAsync size=%d status=%d\n", 4 << 20, static_cast<int>(st));
  return st == CUBLAS_STATUS_ALLOC_FAILED ? 0 : 1;
}
