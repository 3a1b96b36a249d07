#include "shim/dump/signal_dump.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "shim/dump/dumper.h"
#include "shim/base/log.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

Recorder* g_recorder_for_signal = nullptr;
int g_signal = 0;
std::atomic<int> g_pipe_read{-1};
std::atomic<int> g_pipe_write{-1};
struct sigaction g_previous;
std::atomic<bool> g_have_previous{false};
std::atomic<unsigned long> g_count{0};

void handler(int sig, siginfo_t* info, void* uctx) {
  const int saved = errno;
  g_count.fetch_add(1, std::memory_order_relaxed);
  const int fd = g_pipe_write.load(std::memory_order_acquire);
  if (fd >= 0) {
    const char c = 1;
    ssize_t n = write(fd, &c, 1);  // non-blocking: a full pipe already has a dump pending
    (void)n;
  }
  errno = saved;
  // Chain to whatever the program (or its environment) installed before us.
  if (g_have_previous.load(std::memory_order_acquire)) {
    if (g_previous.sa_flags & SA_SIGINFO) {
      if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, uctx);
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
      g_previous.sa_handler(sig);
    }
  }
}

void* dump_thread_main(void* arg) {
  const int fd = int(reinterpret_cast<intptr_t>(arg));
  for (;;) {
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    // Another thread may be writing an out-of-memory bundle: this thread can
    // afford to wait for it (up to a minute), then writes its own.
    dump_when_free(g_recorder_for_signal, DumpReason::kSignal, 60000);
  }
  return nullptr;
}

// A fresh pipe and the thread reading it. Every signal is blocked in the
// thread so the signal is always delivered to a program thread.
bool start_thread() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  const int rc = pthread_create(&t, &attr, dump_thread_main, reinterpret_cast<void*>(intptr_t(fds[0])));
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    close(fds[0]);
    close(fds[1]);
    return false;
  }
#ifdef __GLIBC__
  pthread_setname_np(t, "gpumemrec-dump");
#endif
  g_pipe_read.store(fds[0], std::memory_order_release);
  g_pipe_write.store(fds[1], std::memory_order_release);
  return true;
}

}  // namespace

void signal_dump_start(Recorder* r) {
  if (!r || r->cfg.dump_signal <= 0) return;
  g_recorder_for_signal = r;
  g_signal = r->cfg.dump_signal;
  if (!start_thread()) {
    GM_WARN("cannot start the signal dump thread; GPUMEMREC_DUMP_SIGNAL is off");
    return;
  }
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction prev;
  if (sigaction(g_signal, &sa, &prev) != 0) {
    GM_WARN("cannot install the handler for signal {}: {}", g_signal, std::strerror(errno));
    return;
  }
  if (prev.sa_flags & SA_SIGINFO ? prev.sa_sigaction != nullptr
                                 : (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN)) {
    g_previous = prev;
    g_have_previous.store(true, std::memory_order_release);
  }
  GM_INFO("signal {} writes a bundle (reason 'signal')", g_signal);
}

void signal_dump_atfork_child() {
  if (g_signal <= 0) return;
  // The inherited pipe is shared with the parent, whose thread would answer
  // our signals: close it and start our own.
  const int r = g_pipe_read.exchange(-1);
  const int w = g_pipe_write.exchange(-1);
  if (r >= 0) close(r);
  if (w >= 0) close(w);
  start_thread();
}

unsigned long signal_dump_count() { return g_count.load(std::memory_order_relaxed); }

}  // namespace gpumemrec
