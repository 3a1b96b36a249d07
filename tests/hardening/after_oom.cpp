// after_oom: the process dies, forks or execs right after an out-of-memory
// failure, while the recorder's bundle of that failure may still be being
// written by its writer thread (docs/reliability.md, "The out-of-memory
// verdict and the writer thread").
//
//   after_oom MODE [delay_ms=0] [handler=none|exit|reraise|default] [live=3000]
//
// First fills the recorder's ring (40,000 cudaMalloc/cudaFree pairs of 256
// bytes: more than the default 65,536 events) and makes `live` allocations of
// 4096 bytes that stay live, so the bundle takes a while to write; then asks
// for more than the device has (the OOM), prints "OOM rc=<rc>", waits
// delay_ms and does MODE:
//   exit       exit(3)
//   abort      abort()
//   segv       a store through a null pointer (a real SIGSEGV)
//   term       raise(SIGTERM)
//   wait       prints WAITING and pauses for ever (the test sends SIGKILL)
//   fork_exit  fork(); the child calls _exit(0) at once; the parent waits
//              for it, prints CHILD status=<s> and returns 0 from main
//   fork_exit_normal  the same with exit(0) in the child (atexit handlers run)
//   fork_oom   fork(); the child asks for more than the device has too
//              (size 2^40 + 2^20, "CHILD_OOM rc=<rc>") and returns exit(0);
//              the parent waits and returns 0
//   exec       execvp("true")
// handler=exit|reraise|default installs the program's own handler for
// SIGSEGV, SIGABRT and SIGTERM before the first GPU call: it prints
// "HANDLER sig=<n> n=<times called>", then
//   exit     _exit(70);
//   reraise  what Python's faulthandler does (cpython Modules/faulthandler.c,
//            faulthandler_fatal_error): the handler is installed with
//            SA_NODEFER; it puts back the disposition it replaced and
//            raise()s the signal, delivered at once, inside the handler;
//   default  sets the default action and raise()s the signal, delivered
//            when the handler returns (the signal is blocked meanwhile).
// On stderr (times vary, not compared between runs): "OOMCALL us=<duration
// of the failing call>", and for fork modes "CHILDTIME ms=<fork to reaped>".
#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

volatile sig_atomic_t g_handled = 0;
enum class HandlerKind { kExit, kReraise, kDefault } g_kind = HandlerKind::kExit;
struct sigaction g_replaced[NSIG];  // what install_handlers replaced
int* volatile g_null = nullptr;  // read at run time: the compiler cannot see the null store

void put_num(char* buf, size_t* at, long v) {
  char digits[24];
  int n = 0;
  do digits[n++] = char('0' + v % 10); while ((v /= 10) > 0 && n < 20);
  while (n > 0) buf[(*at)++] = digits[--n];
}

void on_signal(int sig) {
  g_handled = g_handled + 1;
  char line[64];
  size_t at = 0;
  for (const char* s = "HANDLER sig="; *s; ++s) line[at++] = *s;
  put_num(line, &at, sig);
  for (const char* s = " n="; *s; ++s) line[at++] = *s;
  put_num(line, &at, g_handled);
  line[at++] = '\n';
  ssize_t w = write(1, line, at);
  (void)w;
  if (g_kind == HandlerKind::kExit) _exit(70);
  if (g_kind == HandlerKind::kReraise) sigaction(sig, &g_replaced[sig], nullptr);
  else signal(sig, SIG_DFL);
  raise(sig);  // reraise: delivered now (SA_NODEFER); default: on return
}

void install_handlers(const char* how) {
  if (std::strcmp(how, "none") == 0) return;
  g_kind = std::strcmp(how, "exit") == 0      ? HandlerKind::kExit
           : std::strcmp(how, "reraise") == 0 ? HandlerKind::kReraise
                                              : HandlerKind::kDefault;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = g_kind == HandlerKind::kReraise ? SA_NODEFER : 0;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGABRT, SIGTERM}) sigaction(sig, &sa, &g_replaced[sig]);
}

void fill_ring_and_live(long live) {
  for (int i = 0; i < 40000; ++i) {
    void* p = nullptr;
    if (cudaMalloc(&p, 256) != cudaSuccess || cudaFree(p) != cudaSuccess) {
      std::printf("ERROR churn %d\n", i);
      std::exit(1);
    }
  }
  for (long i = 0; i < live; ++i) {
    void* p = nullptr;
    if (cudaMalloc(&p, 4096) != cudaSuccess) {
      std::printf("ERROR live allocation %ld\n", i);
      std::exit(1);
    }
  }
  std::printf("LIVE n=%ld\n", live);
}

int oom(size_t size) {
  void* p = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = cudaMalloc(&p, size);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  std::fprintf(stderr, "OOMCALL us=%lld\n", static_cast<long long>(us.count()));
  cudaGetLastError();
  return rc;
}

int fork_child(const std::string& mode) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    std::printf("ERROR fork\n");
    return 1;
  }
  if (pid == 0) {
    if (mode == "fork_exit") _exit(0);
    if (mode == "fork_oom") std::printf("CHILD_OOM rc=%d\n", oom((size_t(1) << 40) + (size_t(1) << 20)));
    std::exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  std::fprintf(stderr, "CHILDTIME ms=%lld pid=%d\n", static_cast<long long>(ms.count()), int(pid));
  std::printf("CHILD status=%d\n", status);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string mode = argc > 1 ? argv[1] : "exit";
  const long delay_ms = argc > 2 ? std::atol(argv[2]) : 0;
  install_handlers(argc > 3 ? argv[3] : "none");
  fill_ring_and_live(argc > 4 ? std::atol(argv[4]) : 3000);
  std::printf("OOM rc=%d\n", oom(size_t(1) << 40));
  std::fflush(stdout);
  if (delay_ms > 0) {
    struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
  }
  if (mode == "exit") std::exit(3);
  if (mode == "abort") std::abort();
  if (mode == "segv") *g_null = 1;
  if (mode == "term") raise(SIGTERM);
  if (mode == "wait") {
    std::printf("WAITING\n");
    for (;;) pause();
  }
  if (mode.rfind("fork_", 0) == 0) return fork_child(mode);
  if (mode == "exec") {
    char* args[] = {const_cast<char*>("true"), nullptr};
    execvp("true", args);
    std::perror("execvp");
    return 127;
  }
  std::printf("ERROR mode %s survived\n", mode.c_str());
  return 1;
}
