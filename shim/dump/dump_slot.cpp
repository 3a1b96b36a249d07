#include "shim/dump/dump_slot.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace gpumemrec {

namespace {

std::atomic<long> g_holder_tid{0};  // 0: free
std::atomic<int> g_holder_reason{0};
std::atomic<int> g_tmp_dirfd{-1};
char g_tmp_name[256];  // written by the holder only, read by the holder's own exit path
std::atomic<int> g_wanted{0};  // on-demand requests waiting for the slot
thread_local bool t_last_try_busy = false;

bool is_failure(DumpReason r) { return r == DumpReason::kOom || r == DumpReason::kLimit || r == DumpReason::kFailAfter; }

long this_tid() { return long(syscall(SYS_gettid)); }

}  // namespace

bool dump_slot_try_acquire(DumpReason reason) {
  long expected = 0;
  const long me = this_tid();
  if ((is_failure(reason) && g_wanted.load(std::memory_order_acquire) > 0) ||
      !g_holder_tid.compare_exchange_strong(expected, me, std::memory_order_acq_rel)) {
    t_last_try_busy = true;
    return false;
  }
  t_last_try_busy = false;
  g_holder_reason.store(int(reason), std::memory_order_release);
  return true;
}

void dump_slot_release() {
  g_tmp_dirfd.store(-1, std::memory_order_relaxed);
  g_holder_reason.store(0, std::memory_order_relaxed);
  g_holder_tid.store(0, std::memory_order_release);
}

void dump_slot_want(bool waiting) { g_wanted.fetch_add(waiting ? 1 : -1, std::memory_order_acq_rel); }

bool dump_slot_busy() { return g_holder_tid.load(std::memory_order_acquire) != 0; }

bool dump_slot_held_by_this_thread() { return g_holder_tid.load(std::memory_order_acquire) == this_tid(); }

bool dump_slot_holder_is_failure() {
  return is_failure(DumpReason(g_holder_reason.load(std::memory_order_acquire)));
}

bool dump_slot_last_try_was_busy() { return t_last_try_busy; }

bool dump_slot_wait_free(int max_ms, bool yield_to_requests) {
  if (dump_slot_held_by_this_thread()) return false;
  for (long waited_us = 0; dump_slot_busy() || (yield_to_requests && g_wanted.load(std::memory_order_acquire) > 0);
       waited_us += 1000) {
    if (max_ms >= 0 && waited_us >= long(max_ms) * 1000) return false;
    usleep(1000);
  }
  return true;
}

void dump_slot_note_tmp(int dirfd, const char* tmp_name) {
  std::strncpy(g_tmp_name, tmp_name, sizeof g_tmp_name - 1);
  g_tmp_name[sizeof g_tmp_name - 1] = '\0';
  g_tmp_dirfd.store(dirfd, std::memory_order_release);
}

bool dump_slot_tmp(int* dirfd, char* buf, unsigned long size) {
  const int fd = g_tmp_dirfd.load(std::memory_order_acquire);
  if (fd < 0 || size == 0) return false;
  std::strncpy(buf, g_tmp_name, size - 1);
  buf[size - 1] = '\0';
  *dirfd = fd;
  return true;
}

void dump_slot_reset_after_fork() {
  // The holder (another thread of the parent) does not exist in the child.
  // Our own fork from inside a dump cannot happen (the dump path never forks).
  g_tmp_dirfd.store(-1);
  g_wanted.store(0);
  g_holder_reason.store(0);
  g_holder_tid.store(0);
  t_last_try_busy = false;
}

}  // namespace gpumemrec
