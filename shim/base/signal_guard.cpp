#include "shim/base/signal_guard.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>

namespace gpumemrec {

void DumpSignalGuard::dump_signals(sigset_t* set) {
  sigemptyset(set);
  sigaddset(set, SIGXFSZ);
  sigaddset(set, SIGPIPE);
}

DumpSignalGuard::DumpSignalGuard() {
  const int saved = errno;
  sigset_t block;
  dump_signals(&block);
  // What is pending before we block is the program's: never consumed.
  sigemptyset(&pending_before_);
  sigpending(&pending_before_);
  active_ = pthread_sigmask(SIG_BLOCK, &block, &old_mask_) == 0;
  errno = saved;
}

DumpSignalGuard::~DumpSignalGuard() {
  if (!active_) return;
  const int saved = errno;
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  for (int sig : {SIGXFSZ, SIGPIPE}) {
    // Pending before we blocked (the program's own, e.g. one it blocks
    // itself): leave it where it is.
    if (!sigismember(&pending, sig) || sigismember(&pending_before_, sig)) continue;
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    siginfo_t info;
    std::memset(&info, 0, sizeof info);
    const struct timespec zero = {0, 0};
    if (sigtimedwait(&one, &info, &zero) != sig) continue;
    // The kernel sends SIGXFSZ / SIGPIPE for a failed write as if the
    // process had sent them to itself (SI_USER from our own pid, see
    // send_sig() and __send_signal_locked() in kernel/signal.c; si_pid is 0
    // when the kernel had no queue entry left). Anything else was sent by someone else
    // while we blocked: give it back with its original information.
    const bool raised_by_us = info.si_code == SI_USER && (info.si_pid == getpid() || info.si_pid == 0);
    // (rt_sigqueueinfo keeps si_pid etc. but the kernel only lets the main
    // thread queue an SI_USER signal to its own process; elsewhere kill().)
    if (!raised_by_us && syscall(SYS_rt_sigqueueinfo, getpid(), sig, &info) != 0) kill(getpid(), sig);
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  errno = saved;
}

}  // namespace gpumemrec
