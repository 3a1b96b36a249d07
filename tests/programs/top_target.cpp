// top_target: a program for `gpumemrec top` to watch (tests/e2e/test_top.py),
// stopped at known points. Links -lcudart (the fake runtime, two devices:
// FAKEGPU_DEVICES=2).
//
// Start: on device 0, alloc_weights (64 MiB) and 4 x alloc_activation
// (8 MiB, freed again: the peak is 96 MiB), then alloc_cache 2 x 4 MiB; on
// device 1, alloc_other (16 MiB). Then it says "READY step=0" and reads
// commands from stdin, one a line, answering each with READY step=<n>:
//   grow       alloc_growth: 1 MiB more on device 0, from a second thread
//   churn <n>  n pairs of 4 KiB cudaMalloc/cudaFree (churn_pair)
//   quit       exit 0 (everything still live)
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "prog_common.h"

extern "C" PROG_NOINLINE void* alloc_weights(uint64_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) prog_fail("alloc_weights", 1);
  return p;
}
extern "C" PROG_NOINLINE void* alloc_activation(uint64_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) prog_fail("alloc_activation", 1);
  return p;
}
extern "C" PROG_NOINLINE void* alloc_cache(uint64_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) prog_fail("alloc_cache", 1);
  return p;
}
extern "C" PROG_NOINLINE void* alloc_other(uint64_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) prog_fail("alloc_other", 1);
  return p;
}
extern "C" PROG_NOINLINE void* alloc_growth(uint64_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) prog_fail("alloc_growth", 1);
  return p;
}
extern "C" PROG_NOINLINE void churn_pair() {
  void* p = nullptr;
  if (cudaMalloc(&p, 4096) != cudaSuccess) prog_fail("churn_pair", 1);
  cudaFree(p);
}

int main() {
  prog_init_stdout();
  constexpr uint64_t kMiB = 1 << 20;
  if (cudaSetDevice(0) != cudaSuccess) prog_fail("cudaSetDevice", 1);
  alloc_weights(64 * kMiB);
  std::vector<void*> acts;
  for (int i = 0; i < 4; ++i) acts.push_back(alloc_activation(8 * kMiB));
  for (void* a : acts) cudaFree(a);
  for (int i = 0; i < 2; ++i) alloc_cache(4 * kMiB);
  if (cudaSetDevice(1) != cudaSuccess) prog_fail("cudaSetDevice", 1);
  alloc_other(16 * kMiB);
  if (cudaSetDevice(0) != cudaSuccess) prog_fail("cudaSetDevice", 1);
  int step = 0;
  printf("READY step=%d\n", step);
  char line[128];
  while (fgets(line, sizeof line, stdin)) {
    if (strncmp(line, "quit", 4) == 0) break;
    if (strncmp(line, "grow", 4) == 0) {
      std::thread([] {
        cudaSetDevice(0);
        alloc_growth(kMiB);
      }).join();
    } else if (strncmp(line, "churn ", 6) == 0) {
      for (long i = strtol(line + 6, nullptr, 10); i > 0; --i) churn_pair();
    }
    printf("READY step=%d\n", ++step);
  }
  printf("DONE\n");
  return 0;
}
