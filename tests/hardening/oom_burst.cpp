// oom_burst: a burst of out-of-memory episodes, each recovered at once the
// way a caching allocator recovers (PyTorch's DeviceCachingAllocator::malloc
// frees its cached blocks and calls cudaMalloc again), then one that is not
// (docs/reliability.md, "The out-of-memory verdict and the writer thread").
//
//   oom_burst N [live=3000]
//
// Fills the recorder's ring (40,000 cudaMalloc/cudaFree pairs) and keeps
// `live` allocations of 4096 bytes, so that each bundle takes a while to
// write; then fills the device with a "cache" block, and N times: asks for
// 2 MiB + i*4096 bytes (fails: the device is full), frees the cache, asks
// again (succeeds: the episode recovered), frees that and takes the cache
// back. Microseconds apart: the episodes come faster than bundles are
// written. Then asks for 2^40 bytes once and never retries; exit(0) makes
// that episode fatal. Prints "RECOVERED i size=<bytes>" per episode and
// "FATAL size=<bytes>".
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

void must(bool ok, const char* what, long i) {
  if (ok) return;
  std::printf("ERROR %s %ld\n", what, i);
  std::exit(1);
}

void fill_ring_and_live(long live) {
  for (long i = 0; i < 40000; ++i) {
    void* p = nullptr;
    must(cudaMalloc(&p, 256) == cudaSuccess && cudaFree(p) == cudaSuccess, "churn", i);
  }
  for (long i = 0; i < live; ++i) {
    void* p = nullptr;
    must(cudaMalloc(&p, 4096) == cudaSuccess, "live allocation", i);
  }
}

// All of the device's free memory but 1 MiB.
void* take_cache() {
  size_t free_bytes = 0, total = 0;
  must(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess && free_bytes > (2 << 20), "cudaMemGetInfo", 0);
  void* cache = nullptr;
  must(cudaMalloc(&cache, free_bytes - (1 << 20)) == cudaSuccess, "cache", 0);
  return cache;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: oom_burst N [live=3000]\n");
    return 2;
  }
  const long n = std::atol(argv[1]);
  long live = 3000;
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]).rfind("live=", 0) == 0) live = std::atol(argv[i] + 5);
  fill_ring_and_live(live);
  void* cache = take_cache();
  for (long i = 0; i < n; ++i) {
    const size_t size = (size_t(2) << 20) + size_t(i) * 4096;
    void* p = nullptr;
    must(cudaMalloc(&p, size) == cudaErrorMemoryAllocation, "the first attempt did not fail", i);
    cudaGetLastError();
    must(cudaFree(cache) == cudaSuccess, "free cache", i);
    must(cudaMalloc(&p, size) == cudaSuccess, "retry", i);
    must(cudaFree(p) == cudaSuccess, "free retry", i);
    cache = take_cache();
    std::printf("RECOVERED %ld size=%zu\n", i, size);
  }
  void* p = nullptr;
  const size_t huge = size_t(1) << 40;
  must(cudaMalloc(&p, huge) == cudaErrorMemoryAllocation, "the last request did not fail", n);
  cudaGetLastError();
  std::printf("FATAL size=%zu\n", huge);
  std::fflush(stdout);
  std::exit(0);
}
