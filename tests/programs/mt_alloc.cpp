// mt_alloc: multi-threaded cudaMalloc/cudaFree stress (links -lcudart).
//
//   mt_alloc [threads=8] [iterations=1000] [max_chunk=1048576]
//
// Each thread (seeded with its index, deterministic per thread) does
// <iterations> steps: with 35% probability (when it holds something) it
// cudaFree's a random live allocation, otherwise it cudaMalloc's 1..max_chunk
// bytes. cudaErrorMemoryAllocation is tolerated and counted (the error is
// cleared with cudaGetLastError); any other error counts as an error and makes
// the exit code 1. Live allocations are left unfreed at exit.
// Output (printed by the main thread after joining):
//   START prog=mt_alloc threads=<t> iterations=<i> max_chunk=<m>
//   THREAD id=<k> allocs=<n> frees=<n> ooms=<n> errors=<n> live_count=<n> live_bytes=<b>
//   TOTAL allocs=<n> frees=<n> ooms=<n> errors=<n> live_count=<n> live_bytes=<b>
//   DONE live_count=<n> live_bytes=<b>
#include <cuda_runtime_api.h>

#include <thread>

#include "prog_common.h"

namespace {

struct Worker {
  int id = 0;
  int iterations = 0;
  uint64_t max_chunk = 0;
  uint64_t rng = 0;
  LiveSet live;
  int allocs = 0, frees = 0, ooms = 0, errors = 0;
};

uint64_t next_rand(uint64_t* s) {  // xorshift64*
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

}  // namespace

extern "C" PROG_NOINLINE cudaError_t allocate_tensor_mt(uint64_t size, void** out) { return cudaMalloc(out, size); }

extern "C" PROG_NOINLINE cudaError_t release_tensor_mt(void* p) { return cudaFree(p); }

extern "C" PROG_NOINLINE void worker_thread_main_mt(Worker* w) {
  for (int i = 0; i < w->iterations; ++i) {
    const uint64_t r = next_rand(&w->rng);
    if (!w->live.items.empty() && r % 100 < 35) {
      const size_t idx = static_cast<size_t>((r >> 8) % w->live.items.size());
      LiveAlloc a = w->live.take(idx);
      const cudaError_t e = release_tensor_mt(reinterpret_cast<void*>(static_cast<uintptr_t>(a.ptr)));
      if (e == cudaSuccess) ++w->frees;
      else ++w->errors;
      continue;
    }
    const uint64_t size = 1 + (r >> 16) % w->max_chunk;
    void* p = nullptr;
    const cudaError_t e = allocate_tensor_mt(size, &p);
    if (e == cudaSuccess) {
      ++w->allocs;
      w->live.add(reinterpret_cast<uintptr_t>(p), size);
    } else if (e == cudaErrorMemoryAllocation) {
      ++w->ooms;
      cudaGetLastError();
    } else {
      ++w->errors;
    }
  }
}

int main(int argc, char** argv) {
  prog_init_stdout();
  const int threads = static_cast<int>(prog_parse_size(argc > 1 ? argv[1] : nullptr, 8));
  const int iterations = static_cast<int>(prog_parse_size(argc > 2 ? argv[2] : nullptr, 1000));
  const uint64_t max_chunk = prog_parse_size(argc > 3 ? argv[3] : nullptr, 1 << 20);
  printf("START prog=mt_alloc threads=%d iterations=%d max_chunk=%" PRIu64 "\n", threads, iterations, max_chunk);
  // The ready line: the recorder (its signal handler included) was set up
  // by its constructor before main; a test may signal once it reads this.
  fflush(stdout);

  std::vector<Worker> workers(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    Worker& w = workers[static_cast<size_t>(t)];
    w.id = t;
    w.iterations = iterations;
    w.max_chunk = max_chunk;
    w.rng = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(t + 1);
    pool.emplace_back(worker_thread_main_mt, &w);
  }
  for (auto& th : pool) th.join();

  LiveSet all;
  int allocs = 0, frees = 0, ooms = 0, errors = 0;
  for (const Worker& w : workers) {
    printf("THREAD id=%d allocs=%d frees=%d ooms=%d errors=%d live_count=%zu live_bytes=%" PRIu64 "\n", w.id,
           w.allocs, w.frees, w.ooms, w.errors, w.live.items.size(), w.live.bytes);
    allocs += w.allocs;
    frees += w.frees;
    ooms += w.ooms;
    errors += w.errors;
    for (const LiveAlloc& a : w.live.items) all.add(a.ptr, a.size);
  }
  printf("TOTAL allocs=%d frees=%d ooms=%d errors=%d live_count=%zu live_bytes=%" PRIu64 "\n", allocs, frees, ooms,
         errors, all.items.size(), all.bytes);
  prog_print_done(all);
  return errors == 0 ? 0 : 1;
}
