// peak_alloc: allocations up to a known high-water mark, then less, for
// peak.json (run with GPUMEMREC_DUMP_AT_EXIT=1; links -lcudart).
//
//   peak_alloc steps [churn=0]
//     allocates A = 64 MiB (alloc_peak_a), B = 32 MiB (alloc_peak_b): the
//     peak, 96 MiB; frees A; allocates C = 16 MiB (alloc_after_peak); then
//     <churn> pairs of 4 KiB cudaMalloc/cudaFree (churn_pair), sleeping
//     1 ms every 16 pairs (a program the keeper follows with a 4096-event
//     ring); exits with B and C live.
//   peak_alloc burst <pairs>
//     A and B as above, free A, then <pairs> pairs of 4 KiB without pause
//     (faster than a tiny ring can be followed), C, exit.
//   peak_alloc gap <pairs>
//     A and B as above (96 MiB), free A, <pairs> pairs of 4 KiB without
//     pause (a gap a tiny ring cannot follow), 300 ms of rest, then
//     D = 128 MiB (alloc_after_gap: 160 MiB, the peak since the gap), free
//     D, C = 16 MiB; exits with B and C live.
//   peak_alloc threads <n> [size=1048576]
//     n threads each allocate <size> (thread_alloc), wait until all hold
//     theirs (the peak: n * size), free it; then one allocation of <size>;
//     exit with it live.
// Output: START, PEAK bytes=<expected peak>, DONE live_bytes=<n>.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "prog_common.h"

extern "C" PROG_NOINLINE void* alloc_peak_a(uint64_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) prog_fail("alloc_peak_a", 1);
  return p;
}
extern "C" PROG_NOINLINE void* alloc_peak_b(uint64_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) prog_fail("alloc_peak_b", 1);
  return p;
}
extern "C" PROG_NOINLINE void* alloc_after_peak(uint64_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) prog_fail("alloc_after_peak", 1);
  return p;
}
extern "C" PROG_NOINLINE void* alloc_after_gap(uint64_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) prog_fail("alloc_after_gap", 1);
  return p;
}
extern "C" PROG_NOINLINE void churn_pair() {
  void* p = nullptr;
  if (cudaMalloc(&p, 4096) != cudaSuccess) prog_fail("churn_pair", 1);
  cudaFree(p);
}
extern "C" PROG_NOINLINE void* thread_alloc(uint64_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) prog_fail("thread_alloc", 1);
  return p;
}

namespace {

constexpr uint64_t kMiB = 1 << 20;

void steps(uint64_t churn, bool pause) {
  void* a = alloc_peak_a(64 * kMiB);
  alloc_peak_b(32 * kMiB);
  printf("PEAK bytes=%llu\n", (unsigned long long)(96 * kMiB));
  cudaFree(a);
  if (pause) alloc_after_peak(16 * kMiB);
  for (uint64_t i = 0; i < churn; ++i) {
    churn_pair();
    if (pause && i % 16 == 15) usleep(1000);
  }
  if (!pause) alloc_after_peak(16 * kMiB);
  printf("DONE live_bytes=%llu\n", (unsigned long long)(48 * kMiB));
}

void gap(uint64_t pairs) {
  void* a = alloc_peak_a(64 * kMiB);
  alloc_peak_b(32 * kMiB);
  cudaFree(a);
  for (uint64_t i = 0; i < pairs; ++i) churn_pair();
  usleep(300000);
  void* d = alloc_after_gap(128 * kMiB);
  printf("PEAK bytes=%llu\n", (unsigned long long)(160 * kMiB));
  cudaFree(d);
  alloc_after_peak(16 * kMiB);
  printf("DONE live_bytes=%llu\n", (unsigned long long)(48 * kMiB));
}

void threads(int n, uint64_t size) {
  std::atomic<int> holding{0}, released{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i)
    ts.emplace_back([&] {
      void* p = thread_alloc(size);
      holding.fetch_add(1);
      while (holding.load() < n) std::this_thread::yield();
      cudaFree(p);
      released.fetch_add(1);
    });
  for (auto& t : ts) t.join();
  printf("PEAK bytes=%llu\n", (unsigned long long)(n * size));
  thread_alloc(size);
  printf("DONE live_bytes=%llu\n", (unsigned long long)size);
}

}  // namespace

int main(int argc, char** argv) {
  prog_init_stdout();
  const std::string mode = argc > 1 ? argv[1] : "steps";
  printf("START prog=peak_alloc mode=%s\n", mode.c_str());
  if (mode == "steps") steps(argc > 2 ? strtoull(argv[2], nullptr, 0) : 0, true);
  else if (mode == "burst") steps(argc > 2 ? strtoull(argv[2], nullptr, 0) : 100000, false);
  else if (mode == "gap") gap(argc > 2 ? strtoull(argv[2], nullptr, 0) : 200000);
  else if (mode == "threads") threads(argc > 2 ? atoi(argv[2]) : 16, argc > 3 ? prog_parse_size(argv[3], kMiB) : kMiB);
  else prog_fail("unknown mode", 2);
  return 0;
}
