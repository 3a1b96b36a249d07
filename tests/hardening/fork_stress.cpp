// fork_stress: threads hammer cudaMalloc/cudaFree (inside the shim all the
// time) while the main thread forks children. Each child allocates with
// hipMalloc until out of memory (a different fake library, whose lock no
// parent thread can hold at the fork, so a hang can only be the shim's),
// then _exit(0)s. A child that does not finish within 20 s is killed and
// counted as hung.
//
//   fork_stress [threads=4] [forks=20] [child_chunk=16777216] [churn]
// churn: each hammering thread runs its calls in a new short-lived thread,
// 8 calls per thread, and each child first allocates on a new thread too. A
// new thread's first native stack is where libunwind takes its locks (the
// pool that holds the thread's trace cache, the DWARF look-ups of every
// frame it has not seen): the parent's threads are inside libunwind, on its
// locks, at many forks, and a child's new thread takes the same locks
// (shim/record/unwind_guard.h).
// Output: CHILD pid=<pid> status=<exit status> ooms=<n>  ...  DONE hung=<n> bad=<n>
#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {
std::atomic<bool> g_stop{false};

// `calls` calls (0: until stopped).
void hammer(int id, int calls = 0) {
  uint64_t x = 0x9E3779B97F4A7C15ull * uint64_t(id + 1);
  std::vector<void*> live;
  for (int n = 0; !g_stop.load(std::memory_order_relaxed) && (calls == 0 || n < calls); ++n) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const uint64_t r = x * 0x2545F4914F6CDD1Dull;
    if (!live.empty() && (r % 100 < 45 || live.size() > 8)) {
      size_t i = (r >> 8) % live.size();
      cudaFree(live[i]);
      live[i] = live.back();
      live.pop_back();
    } else {
      void* p = nullptr;
      if (cudaMalloc(&p, 1 + (r >> 16) % (4 << 20)) == cudaSuccess) live.push_back(p);
      else cudaGetLastError();
    }
  }
  for (void* p : live) cudaFree(p);
}

void churn(int id) {
  for (int round = 0; !g_stop.load(std::memory_order_relaxed); ++round) std::thread(hammer, id * 100003 + round, 8).join();
}

}  // namespace

// fork_stress_hip.cpp (the CUDA and HIP headers cannot share a unit).
int child_main(size_t chunk, bool new_thread_first);
void hip_warm_up();

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const int threads = argc > 1 ? atoi(argv[1]) : 4;
  const int forks = argc > 2 ? atoi(argv[2]) : 20;
  const size_t chunk = argc > 3 ? strtoull(argv[3], nullptr, 0) : (16u << 20);
  const bool churning = argc > 4 && std::string(argv[4]) == "churn";
  hip_warm_up();  // resolve HIP in the parent first
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    if (churning) pool.emplace_back(churn, t);
    else pool.emplace_back(hammer, t, 0);
  }
  usleep(50000);
  int hung = 0, bad = 0;
  for (int k = 0; k < forks; ++k) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return 1;
    }
    if (pid == 0) _exit(child_main(chunk, churning));
    int status = 0;
    bool done = false;
    for (int waited = 0; waited < 12000; ++waited) {  // 120 s: only a hang, even on a loaded machine
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        done = true;
        break;
      }
      usleep(10000);
    }
    if (!done) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ++hung;
      printf("CHILD pid=%d HUNG\n", int(pid));
      continue;
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0) ++bad;
    printf("CHILD pid=%d status=%d\n", int(pid), code);
  }
  g_stop = true;
  for (auto& t : pool) t.join();
  printf("DONE hung=%d bad=%d\n", hung, bad);
  return hung || bad ? 1 : 0;
}
