#include "shim/dump/crash_wait.h"

#include <signal.h>
#include <sched.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "shim/dump/dump_slot.h"
#include "shim/dump/exit_wait.h"
#include "shim/dump/writer_thread.h"

namespace gpumemrec {

namespace {

constexpr int kSignals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTERM};
constexpr int kCount = int(sizeof kSignals / sizeof kSignals[0]);

struct sigaction g_previous[kCount];
std::atomic<bool> g_installed[kCount];
std::atomic<bool (*)()> g_idle{nullptr};
std::atomic<int> g_signal{0};
// Serializes arm and disarm (the failing thread arms, the writer disarms).
std::atomic<bool> g_changing{false};

int index_of(int sig) {
  for (int i = 0; i < kCount; ++i)
    if (kSignals[i] == sig) return i;
  return -1;
}

// `program_handles_it`: the program had its own handler for the signal, so
// the process may go on after it (exit_wait.h, surely_ends).
void wait_for_writer(bool program_handles_it) {
  if (bool (*idle)() = g_idle.load(std::memory_order_acquire))
    exit_wait(idle, "at a fatal signal", !program_handles_it);
}

bool program_handles(int i) {
  if (i < 0) return false;
  const struct sigaction& p = g_previous[i];
  return (p.sa_flags & SA_SIGINFO) ? p.sa_sigaction != nullptr : p.sa_handler != SIG_DFL;
}

void handler(int sig, siginfo_t* info, void*) {
  const int saved = errno;
  const int i = index_of(sig);
  // Not on a thread that is writing: the writer thread, or one writing a
  // bundle itself (it blocks SIGTERM meanwhile: a fault of its own, which
  // it can never wait for).
  if (!writer_is_this_thread() && !dump_slot_held_by_this_thread()) {
    int none = 0;
    g_signal.compare_exchange_strong(none, sig, std::memory_order_acq_rel);
    writer_wake();
    wait_for_writer(program_handles(i));
  }
  // Put back what was there before us, then let the signal do what it did.
  if (i >= 0 && g_installed[i].exchange(false, std::memory_order_acq_rel)) sigaction(sig, &g_previous[i], nullptr);
  if (!info || info->si_code <= 0) raise(sig);  // sent: delivered again once we return (it is blocked now)
  errno = saved;
}

void lock_changes() {
  while (g_changing.exchange(true, std::memory_order_acquire)) sched_yield();
}
void unlock_changes() { g_changing.store(false, std::memory_order_release); }

}  // namespace

void crash_wait_arm(bool (*idle)()) {
  g_idle.store(idle, std::memory_order_release);
  lock_changes();
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < kCount; ++i) {
    if (g_installed[i].load(std::memory_order_acquire)) continue;
    struct sigaction prev;
    if (sigaction(kSignals[i], nullptr, &prev) != 0 || (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_IGN))
      continue;
    g_previous[i] = prev;
    g_installed[i].store(true, std::memory_order_release);
    if (sigaction(kSignals[i], &sa, nullptr) != 0) g_installed[i].store(false, std::memory_order_release);
  }
  unlock_changes();
}

void crash_wait_disarm(bool (*keep)()) {
  lock_changes();
  if (keep && keep()) {
    unlock_changes();
    return;
  }
  for (int i = 0; i < kCount; ++i) {
    if (!g_installed[i].load(std::memory_order_acquire)) continue;
    struct sigaction cur;
    // Only our own handler goes: one the program installed meanwhile stays.
    if (sigaction(kSignals[i], nullptr, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == handler &&
        g_installed[i].exchange(false, std::memory_order_acq_rel))
      sigaction(kSignals[i], &g_previous[i], nullptr);
    else
      g_installed[i].store(false, std::memory_order_release);
  }
  unlock_changes();
}

int crash_wait_signal() { return g_signal.load(std::memory_order_acquire); }

void crash_wait_atfork_child() {
  // The writer is not in the child: what the parent armed is put back.
  g_changing.store(false);
  crash_wait_disarm();
  g_signal.store(0);
}

}  // namespace gpumemrec
