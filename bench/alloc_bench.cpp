// alloc_bench: an unmodified GPU program (links the CUDA runtime, never a
// gpumemrec header) that times cudaMalloc + cudaFree pairs. run_bench.py runs
// it with and without LD_PRELOAD=libgpumemrec.so against the fake driver.
//
//   alloc_bench pairs  [--threads T] [--pairs N] [--depth D] [--size S] [--warmup W]
//       Each of T threads recurses D native frames deep, then does W
//       untimed and N timed cudaMalloc(S) + cudaFree pairs.
//       Prints: RESULT mode=pairs threads=T depth=D pairs=N
//               cpu_ns_per_pair=<thread CPU time / pairs, mean over threads>
//               wall_ns_per_pair=<wall time of the slowest thread / N>
//   alloc_bench pairs ... --procs P
//       The same in P processes of T threads each (forked before any CUDA
//       call, released together once all have warmed up): mean over all
//       P x T threads. Processes share no memory the recorder writes, so
//       their slowdown with P is the machine's own; run_bench.py reads
//       T threads of one process beside T such processes.
//   alloc_bench pairs ... --lag N
//       Each free comes N of the thread's allocations after its allocation
//       (a stream-ordered allocator, a backward pass freeing what forward
//       allocated): every thread keeps its last N allocations live.
//   alloc_bench pairs ... --lag N --cross
//       Frees on another thread than the allocation's: in rounds, each
//       thread allocates N, all meet, each frees the N of the next thread
//       (round robin), all meet; only the allocating and freeing sections
//       are timed (the meeting is not). With T=1 the thread frees its own
//       (the same-thread figure of the same shape).
//   alloc_bench mem    [--pairs N] [--depth D]
//       Single thread, N pairs, then prints the process's VmRSS / VmSize:
//       MEM rss_kb=<n> vm_kb=<n> events=<2N>
//   alloc_bench pairs ... --live L
//       As above, with L allocations (256 bytes, one call site) made before
//       the warm-up and kept live during the timed pairs: what the live
//       table costs as it grows (docs/performance-log.md, "Out-of-memory path").
//   alloc_bench dump   [--live L] [--sites K] [--events E] [--size S]
//                      [--wait-dir DIR] [--wait-s T]
//       L live allocations made from K distinct native call paths (a
//       recursion of two functions over 14 levels whose path spells the site
//       id in binary), then alloc+free churn until E events have been made,
//       then one cudaMalloc larger than the device. With a synchronous dump
//       that call returns only after the bundle is written; with a dump
//       written by another thread it returns first, and the bundle appears
//       later: with --wait-dir the program polls DIR (every 0.5 ms, up to T
//       seconds, default 60) until a directory named oom_dump_* is there
//       (renamed into place: complete). Host memory from /proc/self/status:
//       the peak (VmHWM) is reset to the current RSS just before the failing
//       call (clear_refs 5, Linux >= 4.0; peak_reset=0 if refused). Prints:
//       DUMP oom_call_ns=<wall time of the failing call>
//            oom_call_cpu_ns=<the failing thread's CPU time in it> rc=<code> events=<n>
//            writer_ns=<failing call's start -> bundle in place; -1: none>
//            rss_before_kb=<VmRSS before the call> hwm_before_kb=<VmHWM then>
//            hwm_dump_kb=<VmHWM once the bundle is there (since the reset)>
//            rss_after_kb=<VmRSS then> peak_reset=<1|0>
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define BENCH_NOINLINE __attribute__((noinline, noclone))

namespace {

uint64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

[[noreturn]] void die(const char* what, int rc) {
  std::fprintf(stderr, "alloc_bench: %s failed: %d\n", what, rc);
  std::exit(1);
}

struct Options {
  std::string mode = "pairs";
  int threads = 1;
  int procs = 1;  // pairs --procs
  uint64_t pairs = 100000;
  uint64_t warmup = 2000;
  int depth = 0;
  uint64_t size = 256;
  uint64_t live = 100000;
  uint64_t sites = 10000;
  uint64_t events = 1000000;
  uint64_t pre_live = 0;     // pairs: --live (kept live during the timed loop; default none)
  uint64_t lag = 0;          // pairs: --lag (each free N allocations after its allocation)
  bool cross = false;        // pairs: --cross (with --lag: frees on the next thread)
  std::string wait_dir;      // dump: poll this directory for the bundle
  uint64_t wait_s = 60;
};

extern "C" BENCH_NOINLINE void release(void* p) {
  cudaError_t rc = cudaFree(p);
  if (rc != cudaSuccess) die("cudaFree", rc);
}

// ---------------------------------------------------------------------------
// pairs / mem

struct Worker {
  const Options* opt = nullptr;
  std::atomic<int>* ready = nullptr;
  std::atomic<bool>* go = nullptr;
  uint64_t cpu_ns = 0, start_ns = 0, end_ns = 0;
  int index = 0;
  std::vector<Worker>* all = nullptr;  // --cross: the workers, to free the next one's
  std::atomic<uint64_t>* met = nullptr;  // --cross: arrivals at the meetings
  std::vector<void*> held;  // --lag: this thread's allocations still live (a FIFO)
  uint64_t next = 0;         // --lag: the oldest one's index in `held`
};

extern "C" BENCH_NOINLINE void bench_pair_loop(const Options* opt, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    void* p = nullptr;
    cudaError_t rc = cudaMalloc(&p, opt->size);
    if (rc != cudaSuccess) die("cudaMalloc", rc);
    rc = cudaFree(p);
    if (rc != cudaSuccess) die("cudaFree", rc);
  }
}

// --lag N: each allocation replaces the thread's oldest live one, freed
// now, N allocations after it was made.
extern "C" BENCH_NOINLINE void bench_lag_loop(Worker* w, uint64_t n) {
  const uint64_t lag = w->opt->lag;
  for (uint64_t i = 0; i < n; ++i) {
    void* p = nullptr;
    cudaError_t rc = cudaMalloc(&p, w->opt->size);
    if (rc != cudaSuccess) die("cudaMalloc", rc);
    if (w->held.size() < lag) {
      w->held.push_back(p);
      continue;
    }
    release(w->held[w->next]);
    w->held[w->next] = p;
    w->next = (w->next + 1) % lag;
  }
}

// --cross: every worker arrives, then all go on (the time spent waiting is
// not timed; `round` counts the meetings so far).
void meet(Worker* w, uint64_t round) {
  const uint64_t want = uint64_t(w->opt->threads) * round;
  w->met->fetch_add(1, std::memory_order_acq_rel);
  while (w->met->load(std::memory_order_acquire) < want) std::this_thread::yield();
}

// --lag N --cross: rounds of N allocations into `held`, a meeting, N frees
// of the next worker's `held`, a meeting; returns the thread CPU time of
// the allocating and freeing sections.
extern "C" BENCH_NOINLINE uint64_t bench_cross_loop(Worker* w, uint64_t n, uint64_t* round) {
  const uint64_t lag = w->opt->lag;
  Worker& next = (*w->all)[size_t((w->index + 1) % w->opt->threads)];
  uint64_t cpu = 0;
  for (uint64_t done = 0; done < n; done += lag) {
    uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (uint64_t i = 0; i < lag; ++i) {
      cudaError_t rc = cudaMalloc(&w->held[i], w->opt->size);
      if (rc != cudaSuccess) die("cudaMalloc", rc);
    }
    cpu += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    meet(w, ++*round);
    c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (uint64_t i = 0; i < lag; ++i) release(next.held[i]);
    cpu += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    meet(w, ++*round);
  }
  return cpu;
}

extern "C" BENCH_NOINLINE void bench_timed_cross(Worker* w) {
  const Options& o = *w->opt;
  w->held.assign(o.lag, nullptr);
  uint64_t round = 0;
  bench_cross_loop(w, o.warmup, &round);
  w->ready->fetch_add(1);
  while (!w->go->load(std::memory_order_acquire)) std::this_thread::yield();
  w->start_ns = clock_ns(CLOCK_MONOTONIC);
  w->cpu_ns = bench_cross_loop(w, o.pairs, &round);
  w->end_ns = clock_ns(CLOCK_MONOTONIC);
}

extern "C" BENCH_NOINLINE void bench_timed_lag(Worker* w) {
  bench_lag_loop(w, w->opt->warmup + w->opt->lag);
  w->ready->fetch_add(1);
  while (!w->go->load(std::memory_order_acquire)) std::this_thread::yield();
  w->start_ns = clock_ns(CLOCK_MONOTONIC);
  const uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  bench_lag_loop(w, w->opt->pairs);
  w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
  w->end_ns = clock_ns(CLOCK_MONOTONIC);
  for (void* p : w->held) release(p);  // untimed
}

extern "C" BENCH_NOINLINE void bench_timed(Worker* w) {
  if (w->opt->lag && w->opt->cross) return bench_timed_cross(w);
  if (w->opt->lag) return bench_timed_lag(w);
  bench_pair_loop(w->opt, w->opt->warmup);
  w->ready->fetch_add(1);
  while (!w->go->load(std::memory_order_acquire)) std::this_thread::yield();
  w->start_ns = clock_ns(CLOCK_MONOTONIC);
  const uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  bench_pair_loop(w->opt, w->opt->pairs);
  w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
  w->end_ns = clock_ns(CLOCK_MONOTONIC);
}

// A real (non-tail) call per level, so the allocation happens `depth` native
// frames below the thread's entry point.
extern "C" BENCH_NOINLINE int bench_descend(int depth, Worker* w) {
  volatile int keep = depth;
  if (depth > 0) {
    int r = bench_descend(depth - 1, w);
    return r + keep;
  }
  bench_timed(w);
  return keep;
}

// Allocations kept live while the pairs are timed (pairs --live).
std::vector<void*> make_live(uint64_t n) {
  std::vector<void*> live;
  live.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    void* p = nullptr;
    cudaError_t rc = cudaMalloc(&p, 256);
    if (rc != cudaSuccess) die("cudaMalloc (live)", rc);
    live.push_back(p);
  }
  return live;
}

// What the timed threads of one process measured.
struct Timed {
  uint64_t cpu_ns = 0;  // summed over the threads
  uint64_t first = UINT64_MAX, last = 0;  // CLOCK_MONOTONIC: the earliest start, the latest end
};

// Runs opt.threads workers; `released()` is called once every one has
// warmed up and returns when they may start the timed pairs.
template <typename Released>
Timed run_workers(const Options& opt, Released&& released) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<uint64_t> met{0};
  std::vector<Worker> workers(size_t(opt.threads));
  std::vector<std::thread> threads;
  for (auto& w : workers) {
    w.opt = &opt;
    w.ready = &ready;
    w.go = &go;
    w.index = int(&w - workers.data());
    w.all = &workers;
    w.met = &met;
    threads.emplace_back([&w, &opt] { bench_descend(opt.depth, &w); });
  }
  while (ready.load() < opt.threads) std::this_thread::yield();
  released();
  go.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  Timed r;
  for (auto& w : workers) {
    r.cpu_ns += w.cpu_ns;
    if (w.start_ns < r.first) r.first = w.start_ns;
    if (w.end_ns > r.last) r.last = w.end_ns;
  }
  return r;
}

void print_pairs(const Options& opt, const Timed& t, size_t live, int procs) {
  const double pairs = double(opt.pairs);
  std::printf("RESULT mode=pairs threads=%d procs=%d depth=%d pairs=%" PRIu64 " live=%zu lag=%" PRIu64
              " cross=%d cpu_ns_per_pair=%.1f wall_ns_per_pair=%.1f\n",
              opt.threads, procs, opt.depth, opt.pairs, live, opt.lag, int(opt.cross),
              double(t.cpu_ns) / double(opt.threads) / double(procs) / pairs, double(t.last - t.first) / pairs);
}

int run_pairs(const Options& opt) {
  std::vector<void*> live = make_live(opt.pre_live);
  const Timed t = run_workers(opt, [] {});
  print_pairs(opt, t, live.size(), 1);
  for (void* p : live) release(p);
  return 0;
}

bool full_io(ssize_t (*io)(int, void*, size_t), int fd, void* buf, size_t n) {
  auto* b = static_cast<char*>(buf);
  while (n) {
    const ssize_t k = io(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k;
    n -= size_t(k);
  }
  return true;
}
ssize_t write_some(int fd, void* b, size_t n) { return write(fd, b, n); }

// pairs --procs P: P processes of opt.threads threads each, forked before
// any CUDA call, so they share no memory the recorder writes (each warms up
// its own copy of the ring). They are released together (the parent closes
// the "go" pipe once every child said it is ready) and the result is the
// mean over all their threads: what the machine itself does to the same
// work as more of it runs at once (clock boost, the hypervisor, shared
// caches), beside which run_bench.py reads T threads of one process.
int run_pairs_in_processes(const Options& opt) {
  int ready[2], go[2], out[2];
  if (pipe(ready) || pipe(go) || pipe(out)) die("pipe", errno);
  std::vector<pid_t> kids;
  for (int k = 0; k < opt.procs; ++k) {
    const pid_t pid = fork();
    if (pid < 0) die("fork", errno);
    if (pid == 0) {
      close(go[1]);
      const Timed t = run_workers(opt, [&] {
        char c = 1, x;
        if (!full_io(write_some, ready[1], &c, 1)) _exit(3);
        while (read(go[0], &x, 1) < 0 && errno == EINTR) {
        }
      });
      _exit(full_io(write_some, out[1], const_cast<Timed*>(&t), sizeof t) ? 0 : 4);
    }
    kids.push_back(pid);
  }
  close(ready[1]);
  close(out[1]);
  close(go[0]);
  char c;
  for (int k = 0; k < opt.procs; ++k)
    if (!full_io(read, ready[0], &c, 1)) die("a child before its timed pairs", 0);
  close(go[1]);  // every child's read returns 0: all start together
  Timed all;
  for (int k = 0; k < opt.procs; ++k) {
    Timed t;
    if (!full_io(read, out[0], &t, sizeof t)) die("a child's result", 0);
    all.cpu_ns += t.cpu_ns;
    if (t.first < all.first) all.first = t.first;
    if (t.last > all.last) all.last = t.last;
  }
  for (pid_t pid : kids) {
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) die("a child", st);
  }
  print_pairs(opt, all, 0, opt.procs);
  return 0;
}

uint64_t status_kb(const char* key) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t v = 0;
  const size_t klen = std::strlen(key);
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, key, klen) == 0 && line[klen] == ':') {
      v = std::strtoull(line + klen + 1, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return v;
}

int run_mem(const Options& opt) {
  Options o = opt;
  o.warmup = 0;
  o.threads = 1;
  std::atomic<int> ready{0};
  std::atomic<bool> go{true};
  Worker w;
  w.opt = &o;
  w.ready = &ready;
  w.go = &go;
  bench_descend(o.depth, &w);
  std::printf("MEM rss_kb=%" PRIu64 " vm_kb=%" PRIu64 " events=%" PRIu64 "\n", status_kb("VmRSS"),
              status_kb("VmSize"), 2 * o.pairs);
  return 0;
}

// ---------------------------------------------------------------------------
// dump: distinct call paths

constexpr int kSiteLevels = 14;  // 2^14 = 16384 possible paths

struct SiteCall {
  uint64_t size;
  void* out;
};

extern "C" BENCH_NOINLINE int site_leaf(SiteCall* c) {
  cudaError_t rc = cudaMalloc(&c->out, c->size);
  if (rc != cudaSuccess) die("cudaMalloc (site)", rc);
  return 0;
}

extern "C" int site_b(int level, uint32_t id, SiteCall* c);

// Level `level` of the path: bit `level` of `id` picks which function the
// next level runs in; site_a and site_b call both from different call
// instructions, so the return addresses on the stack spell the id.
extern "C" BENCH_NOINLINE int site_a(int level, uint32_t id, SiteCall* c) {
  volatile int keep = level;
  int r;
  if (level == 0) r = site_leaf(c);
  else if ((id >> level) & 1) r = site_b(level - 1, id, c);
  else r = site_a(level - 1, id, c);
  return r + keep;
}

extern "C" BENCH_NOINLINE int site_b(int level, uint32_t id, SiteCall* c) {
  volatile int keep = level;
  int r;
  if (level == 0) r = site_leaf(c);
  else if ((id >> level) & 1) r = site_b(level - 1, id, c);
  else r = site_a(level - 1, id, c);
  return r + keep;
}

extern "C" BENCH_NOINLINE void* alloc_at_site(uint32_t id, uint64_t size) {
  SiteCall c{size, nullptr};
  if (id & 1) site_b(kSiteLevels - 1, id, &c);
  else site_a(kSiteLevels - 1, id, &c);
  return c.out;
}

// Resets VmHWM to the current RSS (proc(5), /proc/pid/clear_refs, value 5).
bool reset_peak_rss() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

// A bundle renamed into place: a directory entry named oom_dump_* (the
// writer works under .tmp-<name> and renames when every file is complete).
bool has_bundle(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return false;
  bool found = false;
  while (dirent* e = readdir(d))
    if (std::strncmp(e->d_name, "oom_dump_", 9) == 0) {
      found = true;
      break;
    }
  closedir(d);
  return found;
}

int run_dump(const Options& opt) {
  std::vector<void*> live;
  live.reserve(opt.live);
  uint64_t events = 0;
  // One loop, one call instruction: every allocation of site k has the same
  // stack, so the process has exactly `sites` allocation stacks (+ the free
  // stack + the out-of-memory stack).
  for (uint64_t i = 0; events + 1 < opt.events; ++i) {
    void* p = alloc_at_site(uint32_t(i % opt.sites), opt.size);
    ++events;
    if (i < opt.live) {
      live.push_back(p);
    } else {
      release(p);
      ++events;
    }
  }
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  void* p = nullptr;
  const uint64_t hwm_before = status_kb("VmHWM");
  const bool peak_reset = reset_peak_rss();
  const uint64_t rss_before = status_kb("VmRSS");
  const uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  const uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
  cudaError_t rc = cudaMalloc(&p, total_b + (uint64_t(1) << 30));
  const uint64_t t1 = clock_ns(CLOCK_MONOTONIC);
  const uint64_t c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  ++events;
  int64_t writer_ns = -1;
  if (!opt.wait_dir.empty()) {
    const uint64_t deadline = t0 + opt.wait_s * 1000000000ull;
    for (;;) {
      const uint64_t now = clock_ns(CLOCK_MONOTONIC);
      if (has_bundle(opt.wait_dir.c_str())) {
        writer_ns = int64_t(now - t0);
        break;
      }
      if (now > deadline) break;
      timespec half_ms{0, 500000};
      nanosleep(&half_ms, nullptr);
    }
  }
  std::printf("DUMP oom_call_ns=%" PRIu64 " oom_call_cpu_ns=%" PRIu64 " rc=%d events=%" PRIu64 " live=%zu sites=%" PRIu64 " writer_ns=%" PRId64
              " rss_before_kb=%" PRIu64 " hwm_before_kb=%" PRIu64 " hwm_dump_kb=%" PRIu64 " rss_after_kb=%" PRIu64
              " peak_reset=%d\n",
              t1 - t0, c1 - c0, int(rc), events, live.size(), opt.sites, writer_ns, rss_before, hwm_before,
              status_kb("VmHWM"), status_kb("VmRSS"), int(peak_reset));
  return 0;
}

uint64_t arg_u64(int& i, int argc, char** argv) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "alloc_bench: %s needs a value\n", argv[i]);
    std::exit(2);
  }
  return std::strtoull(argv[++i], nullptr, 10);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  int i = 1;
  if (argc > 1 && argv[1][0] != '-') opt.mode = argv[i++];
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads") opt.threads = int(arg_u64(i, argc, argv));
    else if (a == "--procs") opt.procs = int(arg_u64(i, argc, argv));
    else if (a == "--pairs") opt.pairs = arg_u64(i, argc, argv);
    else if (a == "--warmup") opt.warmup = arg_u64(i, argc, argv);
    else if (a == "--depth") opt.depth = int(arg_u64(i, argc, argv));
    else if (a == "--size") opt.size = arg_u64(i, argc, argv);
    else if (a == "--live") opt.live = opt.pre_live = arg_u64(i, argc, argv);
    else if (a == "--lag") opt.lag = arg_u64(i, argc, argv);
    else if (a == "--cross") opt.cross = true;
    else if (a == "--sites") opt.sites = arg_u64(i, argc, argv);
    else if (a == "--events") opt.events = arg_u64(i, argc, argv);
    else if (a == "--wait-s") opt.wait_s = arg_u64(i, argc, argv);
    else if (a == "--wait-dir" && i + 1 < argc) opt.wait_dir = argv[++i];
    else {
      std::fprintf(stderr, "alloc_bench: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (opt.threads < 1) opt.threads = 1;
  if (opt.cross && opt.lag) {  // whole rounds
    opt.pairs = (opt.pairs + opt.lag - 1) / opt.lag * opt.lag;
    opt.warmup = (opt.warmup + opt.lag - 1) / opt.lag * opt.lag;
  }
  if (opt.sites < 1 || opt.sites > (1u << kSiteLevels)) opt.sites = 1u << kSiteLevels;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (opt.mode == "pairs") return opt.procs > 1 ? run_pairs_in_processes(opt) : run_pairs(opt);
  if (opt.mode == "mem") return run_mem(opt);
  if (opt.mode == "dump") return run_dump(opt);
  std::fprintf(stderr, "alloc_bench: unknown mode %s\n", opt.mode.c_str());
  return 2;
}
