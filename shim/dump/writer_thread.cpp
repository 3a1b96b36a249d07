#include "shim/dump/writer_thread.h"

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <new>

#include "shim/base/background_thread.h"
#include "shim/base/clock.h"
#include "shim/base/spinlock.h"

namespace gpumemrec {

namespace {

sem_t g_jobs;   // one post per job
sem_t g_wakes;  // wake-ups for a job that waits
std::atomic<bool> g_started{false};
std::atomic<bool> g_start_failed{false};
std::atomic<bool> g_starting{false};  // one thread creates it (failing threads race here)
std::atomic<long> g_tid{0};
std::atomic<bool> g_has_clock{false};
clockid_t g_cpu_clock;  // written before g_has_clock (release)
std::atomic<bool> g_parked{false};
std::atomic<int> g_busy{0};  // jobs posted and not yet returned
struct Posted {
  WriterJob job;
  int arg;
};
// The queue: a spin lock, held for a few stores.
SpinLock g_queue_lock;
Posted g_queue[kWriterQueue];
unsigned g_head = 0, g_tail = 0;

bool pop(Posted* out) {
  SpinGuard g(g_queue_lock);
  if (g_head == g_tail) return false;
  *out = g_queue[g_head++ % kWriterQueue];
  return true;
}
pthread_once_t g_sems_once = PTHREAD_ONCE_INIT;

// sem_clockwait on CLOCK_MONOTONIC (a wall-clock step must not shorten or
// stretch a wait); 0, or -1 with errno (ETIMEDOUT, EINTR).
int sem_wait_until(sem_t* sem, uint64_t deadline_ns) {
  struct timespec ts;
  ts.tv_sec = time_t(deadline_ns / 1000000000ull);
  ts.tv_nsec = long(deadline_ns % 1000000000ull);
  return sem_clockwait(sem, CLOCK_MONOTONIC, &ts);
}

void init_sems() {
  sem_init(&g_jobs, 0, 0);
  sem_init(&g_wakes, 0, 0);
}

std::atomic<void (*)()> g_idle_hook{nullptr};
std::atomic<unsigned> g_idle_ms{0};

// Waits for a job; after idle_ms without one, runs the idle hook once.
void wait_for_job() {
  bool hooked = false;
  for (;;) {
    const unsigned ms = g_idle_ms.load(std::memory_order_relaxed);
    void (*hook)() = g_idle_hook.load(std::memory_order_acquire);
    if (!hook || hooked || ms == 0) {
      if (sem_wait(&g_jobs) == 0) return;
      continue;  // EINTR (signals are blocked here, but ptrace)
    }
    if (sem_wait_until(&g_jobs, monotonic_ns() + uint64_t(ms) * 1000000ull) == 0) return;
    if (errno == ETIMEDOUT) {
      hook();
      hooked = true;
    }
  }
}

void* writer_main(void*) {
  g_tid.store(long(syscall(SYS_gettid)), std::memory_order_release);
  if (pthread_getcpuclockid(pthread_self(), &g_cpu_clock) == 0) g_has_clock.store(true, std::memory_order_release);
  for (;;) {
    wait_for_job();
    Posted p;
    if (pop(&p)) p.job(p.arg);
    g_busy.fetch_sub(1, std::memory_order_acq_rel);
  }
  return nullptr;
}

bool start_thread() {
  pthread_once(&g_sems_once, init_sems);
  return start_background_thread(writer_main, "gpumemrec-write");
}

}  // namespace

bool writer_start() {
  for (;;) {
    if (g_started.load(std::memory_order_acquire)) return true;
    if (g_start_failed.load(std::memory_order_acquire)) return false;
    // Two failing threads, each with a frozen set, may both get here: one
    // creates the thread, the other waits the few microseconds that takes
    // (two writers would run two jobs at once on one symbolizer).
    if (!g_starting.exchange(true, std::memory_order_acq_rel)) break;
    sched_yield();
  }
  if (g_started.load(std::memory_order_acquire)) {  // started between the checks
    g_starting.store(false, std::memory_order_release);
    return true;
  }
  const bool ok = start_thread();
  if (ok) {
    g_started.store(true, std::memory_order_release);
  } else {
    g_start_failed.store(true, std::memory_order_release);
  }
  g_starting.store(false, std::memory_order_release);
  return ok;
}

int writer_jobs() { return g_busy.load(std::memory_order_acquire); }

void writer_post(WriterJob job, int arg) {
  g_busy.fetch_add(1, std::memory_order_acq_rel);
  {
    SpinGuard g(g_queue_lock);
    g_queue[g_tail++ % kWriterQueue] = Posted{job, arg};
  }
  sem_post(&g_jobs);
}

long writer_tid() { return g_tid.load(std::memory_order_acquire); }

bool writer_is_this_thread() {
  const long t = writer_tid();
  return t != 0 && t == long(syscall(SYS_gettid));
}

bool writer_busy() { return g_busy.load(std::memory_order_acquire) > 0; }

bool writer_wait_idle(unsigned max_ms) {
  if (writer_is_this_thread()) return false;
  for (unsigned waited = 0; writer_busy(); ++waited) {
    if (waited >= max_ms) return false;
    usleep(1000);
  }
  return true;
}

bool writer_cpu_ns(uint64_t* out) {
  if (!g_has_clock.load(std::memory_order_acquire)) return false;
  struct timespec ts;
  if (clock_gettime(g_cpu_clock, &ts) != 0) return false;
  *out = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
  return true;
}

void writer_set_parked(bool parked) { g_parked.store(parked, std::memory_order_release); }
bool writer_parked() { return g_parked.load(std::memory_order_acquire); }

void writer_wake() {
  if (g_started.load(std::memory_order_acquire)) sem_post(&g_wakes);
}

bool writer_wait(uint64_t deadline_ns) {
  for (;;) {
    int rc;
    if (deadline_ns == 0) {
      rc = sem_wait(&g_wakes);
    } else {
      if (monotonic_ns() >= deadline_ns) return false;
      rc = sem_wait_until(&g_wakes, deadline_ns);
    }
    if (rc == 0) return true;
    if (errno == ETIMEDOUT) return false;
  }
}

void writer_set_idle_hook(void (*hook)(), unsigned idle_ms) {
  g_idle_ms.store(idle_ms, std::memory_order_relaxed);
  g_idle_hook.store(hook, std::memory_order_release);
}

void writer_atfork_child() {
  // The thread (and whatever it was doing) is not in the child; its
  // semaphores may have been in use: fresh ones, never destroyed (as in
  // signal_dump.cpp).
  if (g_started.load()) init_sems();
  g_started.store(false);
  g_start_failed.store(false);
  g_starting.store(false);
  g_tid.store(0);
  g_has_clock.store(false);
  g_parked.store(false);
  g_busy.store(0);
  new (&g_queue_lock) SpinLock();
  g_head = g_tail = 0;
}

}  // namespace gpumemrec
