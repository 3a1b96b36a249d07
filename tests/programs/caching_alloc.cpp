// caching_alloc: a training loop over a caching allocator that behaves like
// PyTorch's (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp,
// DeviceCachingAllocator::malloc): when cudaMalloc fails it clears the
// runtime's error, frees cached blocks that cover the request
// (release_available_cached_blocks: the smallest cached block that covers
// it, else the largest ones until enough is freed; false when not enough
// could be freed) and retries, then frees every cached block
// (release_cached_blocks, after a synchronize; it always returns true, so
// this last attempt is always made) and retries once more; only then is the
// out-of-memory fatal (torch.OutOfMemoryError). One user-visible OOM is up
// to three driver-level failures, and most driver-level failures are
// recovered from. (With PyTorch's default max_split_size, SIZE_MAX,
// release_available_cached_blocks returns false at once; this program
// behaves like a job that sets max_split_size_mb, where it frees blocks.)
//
//   caching_alloc [threads=1] [steps=100] [block=4194304] [fatal=1] [seconds=S] [compute_us=U] [warmup=W]
//                 [after_recovery_us=R] [log=1]
//
// Positional arguments first; `seconds=S` (duration mode) makes every thread
// run steps until S seconds have passed since the start (`steps` is then
// ignored); `compute_us=U` makes each step hold its blocks for U
// microseconds (sleeping, like a step waiting for its kernels) before it
// frees them: a training-like pace; `warmup=W` makes W cudaMalloc/cudaFree
// pairs of 256 bytes before the first step (a recorder's ring is full when a
// long job first fails: 65,536 events by default); `after_recovery_us=R`
// sleeps R microseconds after each request that recovered (out-of-memory
// episodes spaced out, so that a recorder writing a bundle for each keeps
// up); `log=1` prints one line per request that failed at the driver.
//
// Every step of every thread allocates blocks of a size class the cache
// mostly cannot serve (the size alternates between step parities), 12
// blocks a step, so with a device of 16 blocks (FAKEGPU_CAPACITY=16*block)
// each step after the first fills the device through the cache and recovers
// from out-of-memory failures. The threads share one allocator; like
// PyTorch (which drops its lock around cudaMalloc in alloc_block) the mutex
// is not held during cudaMalloc. A request that fails for good (threads
// competing for the device) ends that thread's step early, like a job that
// catches torch.OutOfMemoryError and skips the batch.
// With fatal=1 the last request (main thread, after the others joined) is
// larger than the device: every attempt of the chain fails and the program
// reports a fatal OOM (and exits 0).
//
// Counts (TOTAL line):
//   driver_ooms     failed cudaMalloc calls (several per request)
//   recovered       requests whose first cudaMalloc failed and which then
//                   succeeded (one recovered out-of-memory episode each when
//                   a single thread allocates)
//   gave_up         step requests that failed for good, the step going on
//                   without them (the final fatal request is not counted)
//   max_step_us / p99_step_us  wall time of one training step's allocations
//                   (all threads; the compute_us pause is not included)
//   max_failed_call_us  the longest cudaMalloc call that failed
// Output:
//   START prog=caching_alloc threads=<t> steps=<s> block=<b> seconds=<S> compute_us=<U>
//   RECOVERED tid=<Linux thread id> size=<b> freed=<bytes this request's releases freed> attempts=<n>  (log=1)
//   FAILED tid=<t> size=<b> freed=<b> attempts=<n>       (log=1; the last one is the final fatal request)
//   TOTAL steps=<n> driver_ooms=<n> recovered=<n> gave_up=<n> fatal=<0|1> max_step_us=<us> p99_step_us=<us>
//         max_failed_call_us=<us>
//   DONE live_count=<n> live_bytes=<b>
#include <cuda_runtime_api.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
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
  std::atomic<int64_t> max_failed_call_us{0};  // the longest cudaMalloc that failed

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
  // Chooses what to free: need == 0 all of it; otherwise the smallest block
  // that covers `need`, else the largest blocks until `need` is covered.
  std::vector<Block> pick_victims(uint64_t need) {
    std::lock_guard<std::mutex> g(mu);
    std::sort(cached.begin(), cached.end(), [](const Block& a, const Block& b) { return a.size < b.size; });
    std::vector<Block> victims;
    if (need != 0) {
      auto it = std::find_if(cached.begin(), cached.end(), [&](const Block& b) { return b.size >= need; });
      if (it != cached.end()) {
        victims.push_back(*it);
        cached.erase(it);
        return victims;
      }
    }
    uint64_t freed = 0;
    while (!cached.empty() && (need == 0 || freed < need)) {
      freed += cached.back().size;
      victims.push_back(cached.back());
      cached.pop_back();
    }
    return victims;
  }
  // release_available_cached_blocks (need > 0): true when `need` bytes were
  // freed. release_cached_blocks (need == 0): always true.
  bool release(uint64_t need, uint64_t* freed_total) {
    uint64_t freed = 0;
    for (auto& b : pick_victims(need)) {
      cudaFree(b.ptr);
      freed += b.size;
    }
    *freed_total += freed;
    return need == 0 || freed >= need;
  }
  void give_back(const Block& b) {
    std::lock_guard<std::mutex> g(mu);
    cached.push_back(b);
  }
};

CachingAllocator g_alloc;
bool g_log = false;
long g_after_recovery_us = 0;

}  // namespace

extern "C" PROG_NOINLINE bool alloc_block_cudamalloc(uint64_t size, Block* out, int* attempts) {
  void* p = nullptr;
  ++*attempts;
  const auto t0 = std::chrono::steady_clock::now();
  if (cudaMalloc(&p, size) == cudaSuccess) {
    *out = Block{p, size};
    return true;
  }
  const int64_t us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  for (int64_t cur = g_alloc.max_failed_call_us.load(); us > cur;)
    if (g_alloc.max_failed_call_us.compare_exchange_weak(cur, us)) break;
  cudaGetLastError();  // PyTorch clears the sticky error before retrying
  g_alloc.driver_ooms.fetch_add(1);
  return false;
}

// The retry chain of DeviceCachingAllocator::malloc.
extern "C" PROG_NOINLINE bool caching_malloc(uint64_t size, Block* out) {
  if (g_alloc.take_cached(size, out)) return true;
  int attempts = 0;
  if (alloc_block_cudamalloc(size, out, &attempts)) return true;
  uint64_t freed = 0;
  const bool ok = (g_alloc.release(size, &freed) && alloc_block_cudamalloc(size, out, &attempts)) ||
                  (g_alloc.release(0, &freed) && alloc_block_cudamalloc(size, out, &attempts));
  (ok ? g_alloc.recovered : g_alloc.gave_up).fetch_add(1);
  if (g_log)
    printf("%s tid=%ld size=%" PRIu64 " freed=%" PRIu64 " attempts=%d\n", ok ? "RECOVERED" : "FAILED",
           long(syscall(SYS_gettid)), size, freed, attempts);
  if (ok && g_after_recovery_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(g_after_recovery_us));
  return ok;
}

extern "C" PROG_NOINLINE int64_t training_step(int step, uint64_t block, int blocks, long compute_us) {
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t size = block + uint64_t(step % 2) * 4096;  // a size class the cache cannot serve
  std::vector<Block> held;
  for (int i = 0; i < blocks; ++i) {
    Block b;
    if (!caching_malloc(size, &b)) break;
    held.push_back(b);
  }
  const auto t1 = std::chrono::steady_clock::now();
  if (compute_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(compute_us));
  for (auto& b : held) g_alloc.give_back(b);  // tensors die, the cache keeps them
  return std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count();
}

namespace {

struct Options {
  int threads = 1, steps = 100;
  uint64_t block = 4 << 20;
  bool fatal = true;
  double seconds = 0;  // > 0: duration mode
  long compute_us = 0;
  long warmup = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  int pos = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("seconds=", 0) == 0) o.seconds = std::atof(a.c_str() + 8);
    else if (a.rfind("compute_us=", 0) == 0) o.compute_us = std::atol(a.c_str() + 11);
    else if (a.rfind("warmup=", 0) == 0) o.warmup = std::atol(a.c_str() + 7);
    else if (a.rfind("after_recovery_us=", 0) == 0) g_after_recovery_us = std::atol(a.c_str() + 18);
    else if (a.rfind("log=", 0) == 0) g_log = std::atoi(a.c_str() + 4) != 0;
    else
      switch (pos++) {
        case 0: o.threads = static_cast<int>(prog_parse_size(argv[i], 1)); break;
        case 1: o.steps = static_cast<int>(prog_parse_size(argv[i], 100)); break;
        case 2: o.block = prog_parse_size(argv[i], 4 << 20); break;
        case 3: o.fatal = std::atoi(argv[i]) != 0; break;
        default: fprintf(stderr, "unexpected argument '%s'\n", argv[i]); exit(2);
      }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  prog_init_stdout();
  const Options o = parse(argc, argv);
  printf("START prog=caching_alloc threads=%d steps=%d block=%" PRIu64 " seconds=%g compute_us=%ld\n", o.threads,
         o.steps, o.block, o.seconds, o.compute_us);
  const int per_thread_blocks = 12;
  for (long i = 0; i < o.warmup; ++i) {
    void* p = nullptr;
    if (cudaMalloc(&p, 256) != cudaSuccess || cudaFree(p) != cudaSuccess) prog_fail("warmup", 0);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.seconds);
  std::vector<std::vector<int64_t>> step_us(size_t(o.threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < o.threads; ++t)
    pool.emplace_back([&o, &deadline, &step_us, t] {
      std::vector<int64_t>& mine = step_us[size_t(t)];
      for (int s = 0; o.seconds > 0 ? std::chrono::steady_clock::now() < deadline : s < o.steps; ++s)
        mine.push_back(training_step(s, o.block, per_thread_blocks, o.compute_us));
    });
  for (auto& th : pool) th.join();
  std::vector<int64_t> all;
  for (auto& v : step_us) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  const int64_t max_us = all.empty() ? 0 : all.back();
  const int64_t p99_us = all.empty() ? 0 : all[(all.size() * 99 + 99) / 100 - 1];
  int fatal_seen = 0;
  if (o.fatal) {
    Block b;
    if (!caching_malloc(o.block * 1024, &b)) {
      fatal_seen = 1;  // torch.OutOfMemoryError
      g_alloc.gave_up.fetch_sub(1);  // counted as fatal, not as a step's failed request
    }
  }
  printf("TOTAL steps=%zu driver_ooms=%d recovered=%d gave_up=%d fatal=%d max_step_us=%" PRId64
         " p99_step_us=%" PRId64 " max_failed_call_us=%" PRId64 "\n",
         all.size(), g_alloc.driver_ooms.load(), g_alloc.recovered.load(), g_alloc.gave_up.load(), fatal_seen, max_us,
         p99_us, g_alloc.max_failed_call_us.load());
  uint64_t ignored = 0;
  g_alloc.release(0, &ignored);
  LiveSet none;
  prog_print_done(none);
  return 0;
}
