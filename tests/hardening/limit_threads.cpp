// limit_threads: many threads allocating against GPUMEMREC_LIMIT at once
// (the limit was once checked, then acted on, so concurrent allocations
// together overshot it).
//
//   limit_threads <threads> <iterations> <chunk> <held>
// The main thread first allocates <held> chunks and keeps them to the end
// (so that the room left under the limit is small and refusals certain),
// then starts the threads together.
// Each thread allocates `chunk` bytes, holds up to 4 allocations and frees
// the oldest, in a loop. The program's own count of live bytes goes up
// after a successful cudaMalloc and down before cudaFree, so it never exceeds
// what the recorder counts; its maximum is printed.
// Output: MAX_LIVE=<bytes> OK=<n> REFUSED=<n> OTHER=<n>, DONE. Exit 0.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {
std::atomic<long long> g_live{0}, g_max{0};
std::atomic<long> g_ok{0}, g_refused{0}, g_other{0};
std::atomic<bool> g_go{false};

void note_max(long long v) {
  long long m = g_max.load();
  while (v > m && !g_max.compare_exchange_weak(m, v)) {
  }
}

void worker(int iters, size_t chunk) {
  void* held[4] = {};
  int n = 0;
  while (!g_go.load()) std::this_thread::yield();
  for (int i = 0; i < iters; ++i) {
    if (n == 4) {
      g_live -= (long long)chunk;
      cudaFree(held[0]);
      for (int k = 1; k < 4; ++k) held[k - 1] = held[k];
      n = 3;
    }
    void* p = nullptr;
    cudaError_t rc = cudaMalloc(&p, chunk);
    if (rc == cudaSuccess) {
      note_max(g_live += (long long)chunk);
      held[n++] = p;
      ++g_ok;
    } else if (rc == cudaErrorMemoryAllocation) {
      ++g_refused;
      cudaGetLastError();
    } else {
      ++g_other;
    }
  }
  for (int k = 0; k < n; ++k) {
    g_live -= (long long)chunk;
    cudaFree(held[k]);
  }
}
}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const int threads = argc > 1 ? atoi(argv[1]) : 8;
  const int iters = argc > 2 ? atoi(argv[2]) : 2000;
  const size_t chunk = argc > 3 ? strtoull(argv[3], nullptr, 0) : (1u << 20);
  const int pre = argc > 4 ? atoi(argv[4]) : 0;
  std::vector<void*> kept;
  for (int i = 0; i < pre; ++i) {
    void* p = nullptr;
    if (cudaMalloc(&p, chunk) == cudaSuccess) {
      kept.push_back(p);
      note_max(g_live += (long long)chunk);
    }
  }
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(worker, iters, chunk);
  g_go = true;
  for (auto& t : ts) t.join();
  for (void* p : kept) cudaFree(p);
  printf("MAX_LIVE=%lld OK=%ld REFUSED=%ld OTHER=%ld\n", g_max.load(), g_ok.load(), g_refused.load(),
         g_other.load());
  printf("DONE\n");
  return 0;
}
