// The dump path must never raise a signal the program did not cause.
//
// Writing a bundle can make the kernel send the writing thread SIGXFSZ (a
// write past RLIMIT_FSIZE: default action, terminate with a core) or SIGPIPE
// (a log line on a stderr whose reader is gone). DumpSignalGuard blocks both
// in the calling thread for its lifetime; when it ends it takes back (with
// sigtimedwait and a zero timeout) only those that became pending while it
// was blocking and that this process raised itself, re-queues any that came
// from elsewhere, and restores the thread's signal mask. The failing write
// itself returns EFBIG / EPIPE, which the dump path reports as usual.
#pragma once
#include <signal.h>

namespace gpumemrec {

class DumpSignalGuard {
 public:
  DumpSignalGuard();
  ~DumpSignalGuard();
  DumpSignalGuard(const DumpSignalGuard&) = delete;
  DumpSignalGuard& operator=(const DumpSignalGuard&) = delete;

  // The signals the dump path can raise by itself.
  static void dump_signals(sigset_t* set);

 private:
  sigset_t old_mask_;
  sigset_t pending_before_;
  bool active_ = false;
};

}  // namespace gpumemrec
