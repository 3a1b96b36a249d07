#include "shim/record/unwind_guard.h"

#include "shim/base/clock.h"

namespace gpumemrec {

GM_TLS unsigned UnwindGuard::t_thread_;

// Sequentially consistent: after before_fork's raise of `pending`, the
// other half of enter()'s handshake.
bool UnwindGuard::marks_clear() const {
  for (const Mark& m : marks_)
    if (m.n.load(std::memory_order_seq_cst) != 0) return false;
  return true;
}

bool UnwindGuard::own_mark_set() const {
  const unsigned i = t_thread_;
  return i != 0 && marks_[(i - 1) % kMarks].n.load(std::memory_order_relaxed) != 0;
}

void UnwindGuard::before_fork() {
  pending_.fetch_add(1, std::memory_order_seq_cst);
  if (!on_ || own_mark_set()) return;
  // From here no thread enters libunwind; one inside leaves within a few
  // microseconds unless it is preempted. Waiting for it a little lets the
  // child keep libunwind; the wait is bounded (then the child uses glibc),
  // and skipped when this thread's own line counts someone in (a fork from
  // a signal handler that interrupted our unwind: that count drops only
  // after the fork; or a thread sharing the line: then the child uses glibc).
  // A spin, not sched_yield: no system call here (unwind_guard.h). On a
  // machine with every core busy the thread inside may not run within the
  // bound, and the child then uses glibc.
  const uint64_t until = monotonic_ns() + kForkWaitNs;
  while (!marks_clear() && monotonic_ns() < until) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

bool UnwindGuard::after_fork_child() {
  pending_.store(0, std::memory_order_relaxed);
  if (!on_) return false;
  const bool clear = marks_clear();
  // The child's own threads start from clear marks; only its forking thread
  // exists here, and it is not inside libunwind (it is in fork).
  for (Mark& m : marks_) m.n.store(0, std::memory_order_relaxed);
  on_ = clear;
  return clear;
}

}  // namespace gpumemrec
