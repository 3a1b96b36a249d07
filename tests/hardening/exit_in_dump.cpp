// exit_in_dump: the program's SIGTERM handler calls exit() while a bundle is
// being written (by the recorder's writer thread, after the
// failing cudaMalloc returned).
//
//   exit_in_dump [live_allocations=200000]
//
// Makes many small live allocations (so that the bundle takes a while to
// write), starts a watcher thread that polls $GPUMEMREC_DIR for a ".tmp-"
// entry (a bundle being written) and then sends SIGTERM to the main thread,
// asks for more than the device has, and waits (up to 60 s) for the signal.
// The handler prints HANDLER and calls exit(7). If the watcher never saw a
// bundle being written (no recorder, or the write was too quick), the
// program prints MISSED and exits 3.
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

pthread_t g_main;
std::atomic<bool> g_stop{false};

void on_term(int) {
  static const char msg[] = "HANDLER exit(7)\n";
  ssize_t n = write(1, msg, sizeof msg - 1);
  (void)n;
  exit(7);
}

bool tmp_in(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return false;
  bool found = false;
  while (struct dirent* e = readdir(d))
    if (std::strncmp(e->d_name, ".tmp-", 5) == 0) found = true;
  closedir(d);
  return found;
}

// Gives up when a complete bundle appears without a ".tmp-" ever seen.
bool bundle_in(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return false;
  bool found = false;
  while (struct dirent* e = readdir(d))
    if (std::strncmp(e->d_name, "oom_dump_", 9) == 0) found = true;
  closedir(d);
  return found;
}

void* watcher(void* arg) {
  const char* dir = static_cast<const char*>(arg);
  while (!g_stop.load()) {
    if (dir && tmp_in(dir)) {
      pthread_kill(g_main, SIGTERM);
      return nullptr;
    }
    if (!dir || bundle_in(dir)) break;
    sched_yield();
  }
  g_stop.store(true);
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const long n = argc > 1 ? atol(argv[1]) : 200000;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, nullptr);
  for (long i = 0; i < n; ++i) {
    void* p = nullptr;
    if (cudaMalloc(&p, 256) != cudaSuccess) {
      std::printf("ERROR small allocation %ld failed\n", i);
      return 1;
    }
  }
  std::printf("LIVE n=%ld\n", n);
  g_main = pthread_self();
  // Detached: the handler exits the process without joining it (a joinable
  // thread left behind is a "thread leak" to ThreadSanitizer).
  pthread_t w;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_create(&w, &attr, watcher, getenv("GPUMEMREC_DIR"));
  pthread_attr_destroy(&attr);
  void* big = nullptr;
  const cudaError_t rc = cudaMalloc(&big, size_t(1) << 40);
  for (int i = 0; i < 60000 && !g_stop.load(); ++i) usleep(1000);  // the watcher signals, or gives up
  g_stop.store(true);
  std::printf("MISSED rc=%d\n", int(rc));
  return 3;
}
