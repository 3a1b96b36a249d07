#include "shim/dump/signal_dump.h"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "shim/base/background_thread.h"
#include "shim/base/log.h"
#include "shim/dump/dump_slot.h"
#include "shim/dump/dumper.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

Recorder* g_recorder_for_signal = nullptr;
int g_signal = 0;
// Posted by the handler, waited on by the dump thread. Initialised before the
// handler is installed; re-initialised in a forked child before its thread.
sem_t g_requests;
std::atomic<bool> g_sem_ready{false};
struct sigaction g_previous;
std::atomic<bool> g_have_previous{false};
// Every handler run is a request (docs/reliability.md, "Signal dumps"): the
// handler notes its time and sender, then counts it; the dump thread takes
// all the requests counted so far just before it freezes the state
// (signal_requests_take). Lock-free atomics only: the handler may run on
// two threads at once (the dump thread blocks every signal).
std::atomic<unsigned long> g_count{0};   // handler runs, ever (in this process)
std::atomic<unsigned long> g_served{0};  // of them, taken by a bundle
std::atomic<uint64_t> g_first_ns{0};     // earliest request not taken yet; 0: none
std::atomic<uint64_t> g_last_ns{0};
std::atomic<int64_t> g_last_pid{0};

void note_request(const siginfo_t* info) {
  struct timespec ts = {};
  clock_gettime(CLOCK_REALTIME, &ts);  // async-signal-safe (signal-safety(7))
  const uint64_t now = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
  // si_pid means the sender only for a signal sent by a process (kill,
  // sigqueue, tgkill: si_code <= 0); 0 for one the kernel raised.
  g_last_pid.store(info && info->si_code <= 0 ? int64_t(info->si_pid) : 0, std::memory_order_relaxed);
  g_last_ns.store(now, std::memory_order_relaxed);
  uint64_t none = 0;
  g_first_ns.compare_exchange_strong(none, now, std::memory_order_relaxed);
  g_count.fetch_add(1, std::memory_order_release);  // counted once its time is in
}

void handler(int sig, siginfo_t* info, void* uctx) {
  const int saved = errno;
  note_request(info);
  // sem_post is async-signal-safe (signal-safety(7)); EOVERFLOW (a burst past
  // SEM_VALUE_MAX) only means a dump is pending already.
  if (g_sem_ready.load(std::memory_order_acquire)) sem_post(&g_requests);
  errno = saved;
  // Chain to whatever the program (or its environment) installed before us.
  if (g_have_previous.load(std::memory_order_acquire)) {
    if (g_previous.sa_flags & SA_SIGINFO) {
      if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, uctx);
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
      g_previous.sa_handler(sig);
    }
  }
}

// Writes one signal bundle (when a request is still waiting: one counted
// after the last freeze may have posted the semaphore after its bundle's
// drain, and that bundle serves it already), waiting for any other dump in progress (an
// out-of-memory bundle being written by a program thread) rather than
// dropping the request.
void write_signal_bundle() {
  if (g_count.load(std::memory_order_acquire) == g_served.load(std::memory_order_relaxed)) return;
  dump_slot_want(true);  // failure dumps yield to us until we have written
  for (;;) {
    if (dump_now(g_recorder_for_signal, DumpReason::kSignal, nullptr)) break;
    if (!dump_slot_last_try_was_busy()) break;  // writing failed: dump_now said why
    dump_slot_wait_free(-1, false);
  }
  dump_slot_want(false);
}

void* dump_thread_main(void*) {
  for (;;) {
    if (sem_wait(&g_requests) != 0) {
      if (errno == EINTR) continue;
      return nullptr;
    }
    // Every request that came before this point is served by this bundle.
    while (sem_trywait(&g_requests) == 0) {
    }
    write_signal_bundle();
  }
}

}  // namespace

void signal_dump_start(Recorder* r) {
  if (!r || r->cfg.dump_signal <= 0) return;
  g_recorder_for_signal = r;
  g_signal = r->cfg.dump_signal;
  if (sem_init(&g_requests, 0, 0) != 0) {
    GM_WARN("cannot create the signal dump semaphore; GPUMEMREC_DUMP_SIGNAL is off");
    return;
  }
  g_sem_ready.store(true, std::memory_order_release);
  if (!start_background_thread(dump_thread_main, "gpumemrec-dump")) {
    GM_WARN("cannot start the signal dump thread; GPUMEMREC_DUMP_SIGNAL is off");
    return;
  }
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction prev;
  if (sigaction(g_signal, &sa, &prev) != 0) {
    GM_WARN("cannot install the handler for signal {}: {}", g_signal, std::strerror(errno));
    return;
  }
  if (prev.sa_flags & SA_SIGINFO ? prev.sa_sigaction != nullptr
                                 : (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN)) {
    g_previous = prev;
    g_have_previous.store(true, std::memory_order_release);
  }
  GM_INFO("signal {} writes a bundle (reason 'signal')", g_signal);
}

void signal_dump_atfork_child() {
  if (g_signal <= 0 || !g_sem_ready.load()) return;
  // The parent's thread does not exist here and a parent thread may have
  // been inside sem_wait at the fork: start from a fresh semaphore. (The
  // copy is never destroyed: the handler may be posting to it right now.)
  sem_init(&g_requests, 0, 0);
  // Signals pending in the parent are not the child's (fork(2)): nothing waits.
  g_served.store(g_count.load());
  g_first_ns.store(0);
  start_background_thread(dump_thread_main, "gpumemrec-dump");
}

model::SignalRequests signal_requests_take() {
  model::SignalRequests r;
  r.signal = g_signal;
  // First the time, then the count: a handler that runs between the two
  // is counted here and its time may start the next batch (which then
  // shows a first time a little early), never the other way round.
  r.first_ns = g_first_ns.exchange(0, std::memory_order_acquire);
  const unsigned long upto = g_count.load(std::memory_order_acquire);
  r.count = upto - g_served.exchange(upto, std::memory_order_relaxed);
  r.last_ns = g_last_ns.load(std::memory_order_relaxed);
  r.sender_pid = g_last_pid.load(std::memory_order_relaxed);
  // Its time went with the previous batch (the race above): the last one
  // is the best we know.
  if (r.first_ns == 0 || r.first_ns > r.last_ns) r.first_ns = r.last_ns;
  return r;
}

unsigned long signal_dump_count() { return g_count.load(std::memory_order_relaxed); }

}  // namespace gpumemrec

// The handler runs so far (0 without GPUMEMREC_DUMP_SIGNAL): exported for
// test programs, which find it with dlsym (tests/hardening/oom_signal_burst).
extern "C" __attribute__((visibility("default"))) unsigned long gpumemrec_signal_requests_seen() {
  return gpumemrec::signal_dump_count();
}

