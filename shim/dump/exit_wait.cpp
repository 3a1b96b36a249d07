#include "shim/dump/exit_wait.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "shim/base/clock.h"
#include "shim/base/dump_progress.h"
#include "shim/dump/dump_slot.h"
#include "shim/dump/place/bundle_dir.h"
#include "shim/dump/place/bundle_name.h"
#include "shim/dump/writer_thread.h"

namespace gpumemrec {

namespace {

std::atomic<unsigned> g_limit_s{60};
std::atomic<unsigned> g_stall_ms{kStallMs};
std::atomic<const char*> g_dir{nullptr};
std::atomic<bool> g_gave_up{false};

// What the waiter last saw move, and when.
struct Watch {
  uint64_t steps = 0;
  uint64_t cpu_ns = 0;
  bool has_cpu = false;
  uint64_t moved_ns = 0;

  // True when something moved since the last look.
  bool moved() {
    bool m = false;
    const uint64_t s = dump_progress_steps();
    if (s != steps) m = true, steps = s;
    uint64_t cpu = 0;
    if (writer_cpu_ns(&cpu)) {
      if (has_cpu && cpu != cpu_ns && !writer_parked()) m = true;
      cpu_ns = cpu, has_cpu = true;
    }
    return m;
  }
};

// A small string built without allocating.
struct Line {
  char buf[512];
  size_t len = 0;
  void add(const char* s) {
    for (; *s && len < sizeof buf - 1; ++s) buf[len++] = *s;
  }
  void add(uint64_t v) {
    char d[24];
    int n = 0;
    do d[n++] = char('0' + v % 10), v /= 10;
    while (v && n < 20);
    while (n > 0 && len < sizeof buf - 1) buf[len++] = d[--n];
  }
};

void give_up(ExitWaitEnd why, const char* when, uint64_t waited_ms, bool surely_ends) {
  Line l;
  l.add("gpumemrec: warning: gave up waiting ");
  l.add(when);
  l.add(" for the bundle being written after ");
  l.add(waited_ms / 1000);
  l.add(" s (");
  if (why == ExitWaitEnd::kStalled) {
    l.add("its writer made no progress for ");
    const unsigned stall = g_stall_ms.load(std::memory_order_relaxed);
    if (stall % 1000) {
      l.add(uint64_t(stall));
      l.add(" ms");
    } else {
      l.add(uint64_t(stall / 1000));
      l.add(" s");
    }
  } else {
    l.add("GPUMEMREC_EXIT_WAIT_S=");
    l.add(uint64_t(g_limit_s.load(std::memory_order_relaxed)));
  }
  l.add("): ");
  int dirfd = -1;
  char tmp[256];
  if (dump_slot_tmp(&dirfd, tmp, sizeof tmp)) {
    l.add(tmp);
    l.add(" lost with ");
    l.add(uint64_t(dump_progress_files()));
    l.add(" file(s) written; its temporary directory is removed");
  } else {
    l.add("the bundle in the works is lost (no file of it written yet)");
  }
  l.add("\n");
  (void)!write(2, l.buf, l.len);
  // No new temporary directory from here on (when the process surely ends);
  // one being made now is waited for, so the removal below sees it. The writer may still be creating files
  // in it: a second pass takes what the first one raced with (openat in a
  // removed directory then fails).
  if (surely_ends) close_tmp_gate(g_stall_ms.load(std::memory_order_relaxed));
  if (const char* dir = g_dir.load(std::memory_order_acquire)) {
    for (int pass = 0; pass < 2; ++pass) remove_own_tmp_bundles(dir, long(getpid()));
  }
}

}  // namespace

void exit_wait_init(unsigned limit_s, const char* dir, unsigned stall_ms) {
  g_limit_s.store(limit_s, std::memory_order_relaxed);
  g_stall_ms.store(stall_ms, std::memory_order_relaxed);
  g_dir.store(dir, std::memory_order_release);
}

ExitWaitEnd exit_wait(bool (*done)(), const char* when, bool surely_ends) {
  if (done()) return ExitWaitEnd::kDone;
  if (g_gave_up.load(std::memory_order_acquire)) return ExitWaitEnd::kGaveUpBefore;
  const uint64_t limit_ms = uint64_t(g_limit_s.load(std::memory_order_relaxed)) * 1000ull;
  const uint64_t stall_ns = uint64_t(g_stall_ms.load(std::memory_order_relaxed)) * 1000000ull;
  const uint64_t start = monotonic_ns();
  Watch w;
  w.moved();
  w.moved_ns = start;
  const struct timespec ms = {0, 1000000};
  ExitWaitEnd end = ExitWaitEnd::kLimit;
  for (;;) {
    const uint64_t now = monotonic_ns();
    if (w.moved()) w.moved_ns = now;
    if (now - start >= limit_ms * 1000000ull) break;
    if (now - w.moved_ns >= stall_ns) {
      end = ExitWaitEnd::kStalled;
      break;
    }
    nanosleep(&ms, nullptr);
    if (done()) return ExitWaitEnd::kDone;
  }
  if (!g_gave_up.exchange(true, std::memory_order_acq_rel))
    give_up(end, when, (monotonic_ns() - start) / 1000000ull, surely_ends);
  return end;
}

void exit_wait_atfork_child() {
  g_gave_up.store(false);
  reopen_tmp_gate_after_fork();
}

}  // namespace gpumemrec
