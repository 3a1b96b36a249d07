// oom_signal_burst: threads that keep running out of device memory while
// the program receives a burst of dump signals.
//
//   oom_signal_burst [threads=8] [signals=100] [after=2000] [signal=SIGUSR2]
//
// Each worker allocates 1 MiB blocks until cudaMalloc fails, frees them all,
// and starts again, until told to stop. Once every worker has seen an
// out-of-memory result, the main thread sends the process `signals` signals
// back to back, lets the workers fail `after` more times in all (the
// signal dumps must be served meanwhile, not dropped), stops them, and then
// waits up to 30 s for a bundle with reason "signal" in $GPUMEMREC_DIR (a
// request still pending is written then; a dropped one never is).
// Output: BURST sent=<n>, SIGNAL_BUNDLE seen=<0|1>, TOTAL ooms_ok=<0|1>
// errors=<n>, DONE. Exit 0 unless a call returned an unexpected error.
//
// signals=0: the test sends the signals (from its own pid). Once every worker
// has failed and the recorder's handler is installed, the program says
// READY, then reads stdin: each line "COUNT" is answered with "HANDLED
// runs=<n>"; "STOP" stops the workers, blocks the signal (no handler run can
// come after it) and answers "HANDLED runs=<n>" (final); end of input exits.
// <n> is the shim's count of handler runs (gpumemrec_signal_requests_seen,
// found with dlsym: -1 when the shim is not loaded).
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_errors{0};
std::atomic<int> g_workers_failed{0};
std::atomic<long> g_failures{0};

void worker() {
  std::vector<void*> held;
  bool counted = false;
  while (!g_stop.load()) {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, 1 << 20);
    if (e == cudaSuccess) {
      held.push_back(p);
      continue;
    }
    if (e != cudaErrorMemoryAllocation) g_errors.fetch_add(1);
    cudaGetLastError();
    g_failures.fetch_add(1);
    if (!counted) {
      counted = true;
      g_workers_failed.fetch_add(1);
    }
    for (void* q : held) cudaFree(q);
    held.clear();
  }
  for (void* q : held) cudaFree(q);
}

bool signal_bundle_in(const char* dir) {
  DIR* d = dir ? opendir(dir) : nullptr;
  if (!d) return false;
  bool found = false;
  while (struct dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, "oom_dump_", 9) != 0) continue;
    char path[4096];
    std::snprintf(path, sizeof path, "%s/%s/manifest.json", dir, e->d_name);
    const int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    char buf[4096] = "";
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0 && (std::strstr(buf, "\"reason\":\"signal\"") || std::strstr(buf, "\"reason\": \"signal\""))) found = true;
  }
  closedir(d);
  return found;
}

long handler_runs() {
  using Seen = unsigned long (*)();
  static const auto seen = reinterpret_cast<Seen>(dlsym(RTLD_DEFAULT, "gpumemrec_signal_requests_seen"));
  return seen ? long(seen()) : -1;
}

bool handler_installed(int sig) {
  struct sigaction sa = {};
  if (sigaction(sig, nullptr, &sa) != 0) return false;
  return (sa.sa_flags & SA_SIGINFO) ? sa.sa_sigaction != nullptr
                                    : sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN;
}

void stop(std::vector<std::thread>* pool) {
  g_stop.store(true);
  for (auto& t : *pool) t.join();
  pool->clear();
}

// signals=0: the test sends them, paced by the lines it writes (see above).
int driven_by_stdin(std::vector<std::thread>* pool, int sig) {
  if (!handler_installed(sig)) {
    std::printf("NO_HANDLER\n");
    stop(pool);
    return 2;
  }
  std::printf("READY\n");
  for (std::string line; std::getline(std::cin, line);) {
    if (line == "STOP") {
      stop(pool);
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, sig);
      pthread_sigmask(SIG_BLOCK, &set, nullptr);  // the only thread left that takes it
    }
    std::printf("HANDLED runs=%ld\n", handler_runs());
  }
  stop(pool);
  std::printf("TOTAL errors=%d\n", g_errors.load());
  return g_errors.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const int threads = argc > 1 ? atoi(argv[1]) : 8;
  const int signals = argc > 2 ? atoi(argv[2]) : 100;
  const long after = argc > 3 ? atol(argv[3]) : 2000;
  const int sig = argc > 4 ? atoi(argv[4]) : SIGUSR2;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
  while (g_workers_failed.load() < threads) usleep(1000);
  if (signals == 0) return driven_by_stdin(&pool, sig);
  for (int i = 0; i < signals; ++i) kill(getpid(), sig);
  const long at_burst = g_failures.load();
  std::printf("BURST sent=%d\n", signals);
  while (g_failures.load() < at_burst + after) usleep(1000);
  g_stop.store(true);
  for (auto& t : pool) t.join();
  const char* dir = getenv("GPUMEMREC_DIR");
  bool seen = false;
  for (int i = 0; i < 3000 && !(seen = signal_bundle_in(dir)); ++i) usleep(10000);
  std::printf("SIGNAL_BUNDLE seen=%d\n", seen ? 1 : 0);
  std::printf("TOTAL errors=%d\n", g_errors.load());
  std::printf("DONE\n");
  return g_errors.load() == 0 ? 0 : 1;
}
