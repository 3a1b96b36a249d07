#include "shim/record/unwind_guard.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sched.h>

#include <cerrno>

#include "shim/base/clock.h"

namespace gpumemrec {

GM_TLS unsigned UnwindGuard::t_thread_;

namespace {

long membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }

// MEMBARRIER_CMD_PRIVATE_EXPEDITED needs a registration per process (a
// fork's child registers again). errno is kept: this runs inside the
// program's fork().
bool register_membarrier() {
  const int saved = errno;
  const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
  const bool ok = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                  membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  errno = saved;
  return ok;
}

}  // namespace

bool UnwindGuard::marks_clear() const {
  for (const Mark& m : marks_)
    if (m.n.load(std::memory_order_relaxed) != 0) return false;
  return true;
}

bool UnwindGuard::own_mark_set() const {
  const unsigned i = t_thread_;
  return i != 0 && i <= kExclusive && marks_[i - 1].n.load(std::memory_order_relaxed) != 0;
}

void UnwindGuard::init(bool shared_with_program) { on_ = !shared_with_program && register_membarrier(); }

void UnwindGuard::before_fork() {
  pending_.fetch_add(1, std::memory_order_seq_cst);
  if (!on_) return;
  const int saved = errno;
  // A refused barrier leaves the marks unordered against `pending`: the
  // child cannot trust them and unwinds with glibc (after_fork_child).
  // Written by the forking thread, read by it in the child only.
  barrier_ok_ = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
  // From here no thread enters libunwind; one inside leaves within a few
  // microseconds unless it is preempted. Waiting for it a little lets the
  // child keep libunwind; the wait is bounded (then the child uses glibc),
  // and skipped when this thread's own mark is set (a fork from a signal
  // handler that interrupted our unwind: that mark clears only after fork).
  if (barrier_ok_ && !own_mark_set()) {
    const uint64_t until = monotonic_ns() + kForkWaitNs;
    for (int spins = 0; !marks_clear() && monotonic_ns() < until; ++spins)
      if (spins > 16) sched_yield();
  }
  errno = saved;
}

bool UnwindGuard::after_fork_child() {
  pending_.store(0, std::memory_order_relaxed);
  if (!on_ || !barrier_ok_) {
    on_ = false;
    return false;
  }
  const bool clear = marks_clear();
  // The child's own threads start from clear marks; only its forking thread
  // exists here, and it is not inside libunwind (it is in fork).
  for (Mark& m : marks_) m.n.store(0, std::memory_order_relaxed);
  on_ = clear && register_membarrier();
  return clear;
}

}  // namespace gpumemrec
