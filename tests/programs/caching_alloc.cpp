// caching_alloc: a training loop over a caching allocator that behaves like
// PyTorch's (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc):
// when cudaMalloc fails it clears the runtime's error, frees cached blocks
// that cover the request ("release_available_cached_blocks") and retries,
// then frees every cached block ("release_cached_blocks", after a
// synchronize) and retries once more; only then is the out-of-memory fatal
// (torch.OutOfMemoryError). One user-visible OOM is up to three driver-level
// failures, and most driver-level failures are recovered from.
//
//   caching_alloc [threads=1] [steps=100] [block=4194304] [fatal=1]
//
// Every step of every thread allocates blocks of a size class the cache
// cannot serve (the size alternates between step parities), 12 blocks a step, so with a device
// of 16 blocks (FAKEGPU_CAPACITY=16*block) each step after the first fills
// the device through the cache and recovers from one out-of-memory. The
// threads share one allocator; like PyTorch (which drops its lock around
// cudaMalloc in alloc_block) the mutex is not held during cudaMalloc.
// With fatal=1 the last request is larger than the device: all three
// attempts fail and the program reports a fatal OOM (and exits 0).
// Output:
//   START prog=caching_alloc threads=<t> steps=<s> block=<b>
//   TOTAL steps=<n> driver_ooms=<n> recovered=<n> gave_up=<n> fatal=<0|1> max_step_us=<us>
// (gave_up: requests of the steps that failed for good, the step going on
// without them; the final fatal request is not counted there)
//   DONE live_count=<n> live_bytes=<b>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "prog_common.h"

namespace {

struct Block {
  void* ptr;
  uint64_t size;
};

struct CachingAllocator {
  std::mutex mu;
  std::vector<Block> cached;  // freed by the program, still held on the device
  std::atomic<int> driver_ooms{0}, recovered{0}, gave_up{0};

  bool take_cached(uint64_t size, Block* out) {
    std::lock_guard<std::mutex> g(mu);
    for (size_t i = 0; i < cached.size(); ++i)
      if (cached[i].size == size) {
        *out = cached[i];
        cached.erase(cached.begin() + static_cast<std::ptrdiff_t>(i));
        return true;
      }
    return false;
  }
  // Frees cached blocks until `need` bytes are released (0: all of them).
  bool release(uint64_t need) {
    std::vector<Block> victims;
    {
      std::lock_guard<std::mutex> g(mu);
      std::sort(cached.begin(), cached.end(), [](const Block& a, const Block& b) { return a.size < b.size; });  // largest last
      uint64_t freed = 0;
      while (!cached.empty() && (need == 0 || freed < need)) {
        freed += cached.back().size;
        victims.push_back(cached.back());
        cached.pop_back();
      }
    }
    for (auto& b : victims) cudaFree(b.ptr);
    return !victims.empty();
  }
  void give_back(const Block& b) {
    std::lock_guard<std::mutex> g(mu);
    cached.push_back(b);
  }
};

CachingAllocator g_alloc;

}  // namespace

extern "C" PROG_NOINLINE bool alloc_block_cudamalloc(uint64_t size, Block* out) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) == cudaSuccess) {
    *out = Block{p, size};
    return true;
  }
  cudaGetLastError();  // PyTorch clears the sticky error before retrying
  g_alloc.driver_ooms.fetch_add(1);
  return false;
}

// The retry chain of DeviceCachingAllocator::malloc.
extern "C" PROG_NOINLINE bool caching_malloc(uint64_t size, Block* out) {
  if (g_alloc.take_cached(size, out)) return true;
  if (alloc_block_cudamalloc(size, out)) return true;
  const bool ok = (g_alloc.release(size) && alloc_block_cudamalloc(size, out)) ||
                  (g_alloc.release(0) && alloc_block_cudamalloc(size, out));
  if (ok) g_alloc.recovered.fetch_add(1);
  else g_alloc.gave_up.fetch_add(1);  // this request failed for good (the step goes on without it)
  return ok;
}

extern "C" PROG_NOINLINE int64_t training_step(int step, uint64_t block, int blocks) {
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t size = block + uint64_t(step % 2) * 4096;  // a size class the cache cannot serve
  std::vector<Block> held;
  for (int i = 0; i < blocks; ++i) {
    Block b;
    if (!caching_malloc(size, &b)) break;
    held.push_back(b);
  }
  for (auto& b : held) g_alloc.give_back(b);  // tensors die, the cache keeps them
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char** argv) {
  prog_init_stdout();
  const int threads = static_cast<int>(prog_parse_size(argc > 1 ? argv[1] : nullptr, 1));
  const int steps = static_cast<int>(prog_parse_size(argc > 2 ? argv[2] : nullptr, 100));
  const uint64_t block = prog_parse_size(argc > 3 ? argv[3] : nullptr, 4 << 20);
  const bool fatal = argc > 4 ? std::atoi(argv[4]) != 0 : true;
  printf("START prog=caching_alloc threads=%d steps=%d block=%" PRIu64 "\n", threads, steps, block);
  const int per_thread_blocks = 12;
  std::atomic<int64_t> max_us{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (int s = 0; s < steps; ++s) {
        int64_t us = training_step(s, block, per_thread_blocks);
        int64_t cur = max_us.load();
        while (us > cur && !max_us.compare_exchange_weak(cur, us)) {
        }
      }
    });
  for (auto& th : pool) th.join();
  int fatal_seen = 0;
  if (fatal) {
    Block b;
    if (!caching_malloc(block * 1024, &b)) fatal_seen = 1;  // torch.OutOfMemoryError
  }
  printf("TOTAL steps=%d driver_ooms=%d recovered=%d gave_up=%d fatal=%d max_step_us=%" PRId64 "\n",
         steps * threads, g_alloc.driver_ooms.load(), g_alloc.recovered.load(), g_alloc.gave_up.load() - fatal_seen,
         fatal_seen, max_us.load());
  g_alloc.release(0);
  LiveSet none;
  prog_print_done(none);
  return 0;
}
