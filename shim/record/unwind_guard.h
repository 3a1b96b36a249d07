// Whether a forked child may go on unwinding with libunwind: the marks that
// say no thread of ours was inside libunwind at the fork.
//
// The hazard. libunwind takes locks of its own (its memory pool, the global
// DWARF cache, the pthread_once of a thread's trace cache). A thread of the
// parent that held one at the fork leaves it held for ever in the child, and
// the child's first unwind waits on it. No atfork handler of ours can take
// locks it cannot name.
//
// What we do instead (Dekker's handshake, with sequentially consistent
// atomics on both sides):
//  - every call of ours into libunwind is bracketed by enter()/leave(),
//    which count the thread in and out on its mark: one of kMarks lines,
//    given out round robin once per thread (the first kMarks threads of a
//    process each have a line of their own; later ones share, a count per
//    line), counted in with a locked add (the full barrier), then `pending`
//    is read;
//  - the fork's prepare handler raises `pending` (a full barrier too), then
//    reads the marks. So a thread about to enter libunwind sees `pending`
//    and unwinds that one call with glibc's backtrace() instead, or its mark
//    is visible to the prepare handler;
//  - the prepare handler then waits, at most kForkWaitNs, for a thread
//    still inside to come out (a few microseconds unless it was preempted);
//  - the child sees the marks as they were at the fork: all clear, nothing
//    of ours was inside libunwind, and it keeps libunwind (the fast path, ten
//    times cheaper per frame); one set (a thread was inside, or the forking
//    thread itself, from a signal handler), it unwinds with glibc from then
//    on, as every child did before.
// The hot path pays two locked adds on its own line (in and out) and a read
// of a line written only at a fork, per native stack.
// No system call on the hot path, and none in the fork handlers but the
// wait's sched_yield, which the ring already makes when it spins:
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) would make the hot path's
// barrier free, but it is a system call the program may not allow (a
// seccomp filter that kills on an unknown call, systemd's
// SystemCallFilter=).
//
// Where the guard is off (libunwind was loaded by the program before us, so
// its own threads may hold those locks at a fork), children unwind with
// glibc.
// Lifetime hazard, not covered: a library the program loads later that uses
// the same libunwind (the loader hands it ours) may hold its locks at a fork.
#pragma once
#include <atomic>
#include <cstdint>

#include "shim/base/tls.h"

namespace gpumemrec {

class UnwindGuard {
 public:
  static constexpr unsigned kMarks = 256;
  static constexpr uint64_t kForkWaitNs = 2000000;  // before_fork waits at most this for a thread inside

  // At start-up, once libunwind is chosen: `shared_with_program` when the
  // program had loaded libunwind before us; the guard is on only when
  // libunwind is ours alone.
  void init(bool shared_with_program) { on_ = !shared_with_program; }
  bool on() const { return on_; }

  // Around a call into libunwind. enter() false: a fork is under way, use
  // glibc for this call (nothing to leave()).
  bool enter() {
    if (!on_) return true;
    Mark& m = my_mark();
    m.n.fetch_add(1, std::memory_order_seq_cst);
    if (pending_.load(std::memory_order_seq_cst) == 0) return true;  // the other half: before_fork
    m.n.fetch_sub(1, std::memory_order_release);
    return false;
  }
  void leave() {
    if (on_) my_mark().n.fetch_sub(1, std::memory_order_release);
  }

  // pthread_atfork: prepare (raise `pending`, then the barrier), parent.
  void before_fork();
  void after_fork_parent() { pending_.fetch_sub(1, std::memory_order_relaxed); }
  // In the child: true when no mark was set at the fork (the child may keep
  // libunwind).
  bool after_fork_child();

 private:
  bool marks_clear() const;
  bool own_mark_set() const;  // this thread's line counts someone in (itself, or a thread sharing it)
  struct alignas(128) Mark {  // 128: the adjacent-line prefetcher pairs lines
    std::atomic<uint32_t> n{0};
  };
  Mark& my_mark() {
    unsigned i = t_thread_;
    if (i == 0) i = t_thread_ = threads_.fetch_add(1, std::memory_order_relaxed) + 1;
    return marks_[(i - 1) % kMarks];
  }
  // 1-based thread number, given out by threads_ (one guard per process:
  // the number is the thread's, not the instance's; tests that make several
  // guards use fresh threads for what they count).
  static GM_TLS unsigned t_thread_;
  bool on_ = false;  // written at init and in a fork's child (one thread)
  Mark marks_[kMarks];
  alignas(128) std::atomic<unsigned> threads_{0};
  alignas(128) std::atomic<int> pending_{0};  // forks under way (prepare .. parent)
};

}  // namespace gpumemrec
