#include "shim/record/unwind_guard.h"

#include <sched.h>

#include <cerrno>

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
  // The CPU is given back after a few spins: the thread inside may be
  // waiting for it (measured: a pure spin let 6-9 of 12 churned children
  // keep libunwind on the idle 2-core VM, the yield 12 of 12). sched_yield
  // is the one system call here, one the ring already makes when it spins
  // (ring.h, take_slot).
  const int saved = errno;
  const uint64_t until = monotonic_ns() + kForkWaitNs;
  for (int spins = 0; !marks_clear() && monotonic_ns() < until; ++spins)
    if (spins > 16) sched_yield();
  errno = saved;
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
