// status_load: an unmodified GPU program (links the CUDA runtime, never a
// gpumemrec header) that makes cudaMalloc + cudaFree pairs at a fixed rate,
// for status_bench.py: what the status region costs the recorder's peak
// keeper thread at a known event rate, and what `gpumemrec top` costs
// watching such programs.
//
//   status_load [--rate EVENTS_PER_S] [--seconds S] [--live L] [--sites K]
//       L allocations (4 KiB) kept live from K call paths (recursion depths
//       1..K: distinct stacks), then pairs of 4 KiB until S seconds have
//       passed, paced per millisecond to make EVENTS_PER_S events (two per
//       pair; 0: as fast as it can). Then, from /proc/self/task, the CPU
//       time of the recorder's threads and of the process. Prints:
//         RESULT events=<n> seconds=<wall> events_per_s=<n> process_cpu_ns=<n> main_cpu_ns=<n>
//         THREAD name=<comm> cpu_ns=<utime+stime>      (each gpumemrec-* thread)
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

uint64_t now_ns(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

__attribute__((noinline)) void* live_at_depth(int depth) {
  if (depth > 0) {
    void* p = live_at_depth(depth - 1);
    asm volatile("" ::: "memory");  // not a tail call: one frame per level
    return p;
  }
  void* p = nullptr;
  if (cudaMalloc(&p, 4096) != cudaSuccess) std::abort();
  return p;
}

__attribute__((noinline)) void pair() {
  void* p = nullptr;
  if (cudaMalloc(&p, 4096) != cudaSuccess) std::abort();
  cudaFree(p);
}

uint64_t arg(int argc, char** argv, const char* name, uint64_t def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::strtoull(argv[i + 1], nullptr, 10);
  return def;
}

// The thread's CPU time in ns (schedstat's run time; utime + stime, in
// clock ticks, without it) and its comm.
bool thread_cpu(const char* tid, std::string* comm, uint64_t* ns) {
  char path[96], buf[1024];
  std::snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", tid);
  unsigned long long run_ns = 0;
  bool have_run = false;
  if (FILE* s = std::fopen(path, "r")) {
    have_run = std::fscanf(s, "%llu", &run_ns) == 1;
    std::fclose(s);
  }
  std::snprintf(path, sizeof path, "/proc/self/task/%s/stat", tid);
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* open = std::strchr(buf, '(');
  const char* close = std::strrchr(buf, ')');
  if (!open || !close) return false;
  comm->assign(open + 1, close);
  unsigned long long utime = 0, stime = 0;
  // Fields 14 and 15 after ") S": state is field 3.
  if (std::sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
    return false;
  *ns = have_run ? run_ns : (utime + stime) * (1000000000ull / uint64_t(sysconf(_SC_CLK_TCK)));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t rate = arg(argc, argv, "--rate", 1000000);
  const uint64_t seconds = arg(argc, argv, "--seconds", 10);
  const uint64_t live = arg(argc, argv, "--live", 1000);
  const uint64_t sites = arg(argc, argv, "--sites", 100);
  std::vector<void*> kept;
  for (uint64_t i = 0; i < live; ++i) kept.push_back(live_at_depth(int(i % (sites ? sites : 1))));
  const uint64_t t0 = now_ns(CLOCK_MONOTONIC), end = t0 + seconds * 1000000000ull;
  const uint64_t per_ms = rate / 2000;  // pairs per millisecond
  uint64_t pairs = 0;
  for (uint64_t tick = t0; tick < end;) {
    if (rate == 0) {
      for (int i = 0; i < 1000; ++i) pair();
      pairs += 1000;
      tick = now_ns(CLOCK_MONOTONIC);
      continue;
    }
    for (uint64_t i = 0; i < per_ms; ++i) pair();
    pairs += per_ms;
    tick += 1000000;
    const uint64_t t = now_ns(CLOCK_MONOTONIC);
    if (t < tick) {
      const timespec pause{0, long(tick - t)};
      nanosleep(&pause, nullptr);
    }
  }
  const double wall = double(now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
  std::printf("RESULT events=%llu seconds=%.3f events_per_s=%.0f process_cpu_ns=%llu main_cpu_ns=%llu\n",
              (unsigned long long)(2 * pairs), wall, double(2 * pairs) / wall,
              (unsigned long long)now_ns(CLOCK_PROCESS_CPUTIME_ID), (unsigned long long)now_ns(CLOCK_THREAD_CPUTIME_ID));
  DIR* d = opendir("/proc/self/task");
  for (dirent* e = d ? readdir(d) : nullptr; e; e = readdir(d)) {
    std::string comm;
    uint64_t ns = 0;
    if (e->d_name[0] != '.' && thread_cpu(e->d_name, &comm, &ns) && comm.rfind("gpumemrec", 0) == 0)
      std::printf("THREAD name=%s cpu_ns=%llu\n", comm.c_str(), (unsigned long long)ns);
  }
  if (d) closedir(d);
  for (void* p : kept) cudaFree(p);
  return 0;
}
