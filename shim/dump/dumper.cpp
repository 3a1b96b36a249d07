#include "shim/dump/dumper.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "common/format.h"
#include "shim/base/clock.h"
#include "shim/base/fd_io.h"
#include "shim/base/log.h"
#include "shim/dump/absolute_dir.h"
#include "shim/dump/bundle_dir.h"
#include "shim/dump/bundle_writer.h"
#include "shim/dump/dump_memory.h"
#include "shim/dump/dump_slot.h"
#include "shim/dump/crash_wait.h"
#include "shim/dump/dump_job.h"
#include "shim/dump/episodes.h"
#include "shim/dump/freeze.h"
#include "shim/dump/retention_check.h"
#include "shim/dump/writer_thread.h"
#include "shim/dump/signal_guard.h"
#include "shim/dump/symbolizer.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

GM_TLS PendingRequest t_pending_request;

namespace {

constexpr size_t kWriteBufferBytes = 256 * 1024;
constexpr size_t kRewriteBufferBytes = 32 * 1024;  // the tail of the same mapping
constexpr unsigned kFreezeWaitUs = 20000;

// Prepared at start-up so the dump path needs no large allocation. The
// verdict's rewrite has its own: it runs without the dump slot, while a
// signal or exit dump may be writing through g_buffer.
WriteBuffer g_buffer;
WriteBuffer g_rewrite_buffer;
Symbolizer* g_symbolizer = nullptr;
bool g_frozen_ready = false;

Episodes g_episodes;
// Failures that met another out-of-memory bundle being written (they are
// events in it; said once, at exit, with the count).
std::atomic<uint64_t> g_joined_failures{0};
std::atomic<int> g_dump_seq{0};
std::atomic<bool> g_program_ending{false};
std::atomic<bool> g_freeze_warned{false};
Recorder* g_exit_recorder = nullptr;
// The jobs, one per frozen set: filled by the thread that acquired the set,
// read by the writer (or that thread) until the set is given back.
// Never destroyed: the writer may still read a job while exit() runs the
// static destructors (whose order against our atexit wait is the link's).
DumpJob& job_of(int set) {
  alignas(DumpJob) static unsigned char storage[kFreezeSets][sizeof(DumpJob)];
  static DumpJob* jobs = [] {
    for (auto& s : storage) new (s) DumpJob();
    return reinterpret_cast<DumpJob*>(storage);
  }();
  return jobs[set];
}
// Per set: its frozen stacks are not symbolized yet (a dlclose waits).
std::atomic<bool> g_awaiting_symbols[kFreezeSets];

DumpServices services() {
  DumpServices s;
  s.episodes = &g_episodes;
  s.symbolizer = g_symbolizer;
  s.buffer = g_buffer;
  s.rewrite_buffer = g_rewrite_buffer;
  s.seq = &g_dump_seq;
  s.program_ending = &g_program_ending;
  return s;
}

bool writer_idle() { return !writer_busy(); }
bool writer_has_another_job() { return writer_jobs() > 1; }

void writer_job_main(int set) {
  run_dump_job(job_of(set), services(), true);
  crash_wait_disarm(writer_has_another_job);
}

// Fills the job of a frozen set: what failed, the device's numbers (asked on
// this thread: the device query must run on the failing thread, whose
// context is the device's), then the freeze. False (set given back) when the
// state could not be copied.
bool prepare_job(Recorder* r, int set, DumpReason reason, const FailureInfo* f, uint64_t episode) {
  DumpJob& job = job_of(set);
  job = DumpJob{};
  job.recorder = r;
  job.reason = reason;
  job.has_failure = f != nullptr;
  if (f) job.failure = *f;
  job.episode = episode;
  job.created_ns = realtime_ns();
  job.set = set;
  try {
    DumpMemoryScope memory_scope;
    job.devices = query_devices(f ? hook_backend(f->api) : Backend::kCuda, f ? f->device : -1);
  } catch (...) {
  }
  const char* why = "";
  if (!freeze(r, set, &job.frozen, &why)) {
    freeze_done(set);
    if (!g_freeze_warned.exchange(true)) raw_warning("cannot write a bundle: cannot copy the recorder's state: ", why);
    return false;
  }
  job.failed_before = g_episodes.take_unreported();
  return true;
}

// A new episode's first failure: freeze, hand the job to the writer and
// return. Without a writer thread the bundle is written here (the dump slot
// taken without waiting). False when the failure gets no bundle.
bool freeze_for_writer(Recorder* r, const FailureInfo& f, uint64_t episode) {
  int set = freeze_acquire();
  // Both sets taken: failures come faster than the writer turns them over
  // (it gives a recovered episode's set back within microseconds, so only a
  // burst of episodes gets here): a short wait, then this one goes without.
  for (const uint64_t deadline = monotonic_ns() + kFreezeWaitUs * 1000ull; set < 0 && monotonic_ns() < deadline;) {
    usleep(100);
    set = freeze_acquire();
  }
  if (set < 0) {
    g_episodes.unwatch(episode);  // watched since on_failure opened it
    return false;
  }
  if (!prepare_job(r, set, f.reason, &f, episode)) {
    g_episodes.unwatch(episode);
    return false;
  }
  if (writer_start()) {
    g_awaiting_symbols[set].store(true, std::memory_order_release);
    job_of(set).awaiting_symbols = &g_awaiting_symbols[set];
    writer_post(writer_job_main, set);
    crash_wait_arm(writer_idle);  // after the post: see crash_wait_disarm
    return true;
  }
  if (!dump_slot_try_acquire(f.reason)) {
    g_episodes.unwatch(episode);
    freeze_done(set);
    return false;
  }
  return run_dump_job(job_of(set), services(), false);
}

// Signal and exit dumps, written by the calling thread, which holds the slot
// (and so the inline set, freeze.h).
bool freeze_and_write_here(Recorder* r, DumpReason reason) {
  if (!prepare_job(r, kInlineSet, reason, nullptr, 0)) {
    dump_slot_release();
    return false;
  }
  return run_dump_job(job_of(kInlineSet), services(), false);
}

// The program is ending (exit): an open episode is fatal, and the writer,
// which may be waiting for that verdict, is told.
void begin_program_end() {
  g_program_ending.store(true, std::memory_order_release);
  const uint64_t now = monotonic_ns();
  if (Recorder* r = recorder())  // a window that had closed already says so
    g_episodes.expire(now, r->cfg.episode_ms * 1000000ull, false, FatalCause::kNoRetry);
  g_episodes.expire(now, 0, true, FatalCause::kExit);
  writer_wake();
}

void exit_dump() {
  // Registered from our constructor, so it runs after the program's own
  // atexit handlers and static destructors: what is still live is a leak.
  // Not when exit() was called on the thread that is writing a bundle (a
  // signal handler that interrupted the dump): that dump never finishes.
  // It runs before wait_for_dump_at_exit (registered later): it decides the
  // open episode itself, or it would wait for a writer waiting for that.
  if (g_exit_recorder && !dump_slot_held_by_this_thread()) {
    begin_program_end();
    dump_when_free(g_exit_recorder, DumpReason::kExit, 10000);
  }
}

// At exit the writer may still be writing a bundle or waiting for its
// verdict: the program is ending, so an open episode is fatal; wait for the
// writer (at most 10 s) so that exit never leaves a half-written bundle. If
// this thread is the one writing (exit() from a signal handler during an
// inline dump), waiting would be for ever: remove its temporary directory
// instead (system calls only).
void wait_for_dump_at_exit() {
  if (dump_slot_held_by_this_thread()) {
    int dirfd = -1;
    char tmp[256];
    if (dump_slot_tmp(&dirfd, tmp, sizeof tmp)) remove_bundle_dir(dirfd, tmp);
    // The signal may have come between the mkdir of the temporary directory
    // and its note in the slot: one dumper per process, so any temporary
    // directory with our pid is the one being written.
    if (Recorder* r = recorder()) remove_own_tmp_bundles(r->cfg.dir.c_str(), long(getpid()));
    return;
  }
  begin_program_end();
  wait_while_dumping(10000);
  DumpSignalGuard signal_guard;  // stderr may be a pipe nobody reads any more
  if (const uint64_t n = g_joined_failures.load(std::memory_order_relaxed))
    GM_WARN("{} out-of-memory failure(s) came while another thread was writing a bundle; they are events in "
            "that bundle's ring only", n);
  Recorder* r = recorder();
  if (const uint64_t n = g_episodes.recovered_total(); n && r && !r->cfg.keep_recovered)
    GM_WARN("{} out-of-memory failure(s) recovered without a bundle (GPUMEMREC_RECOVERED=count)", n);
}

// GPUMEMREC_FOLLOW_EXEC=0: programs this one execs do not inherit the shim.
void drop_self_from_ld_preload() {
  const char* pre = std::getenv("LD_PRELOAD");
  if (!pre) return;
  std::string kept;
  const std::string all = pre;
  size_t pos = 0;
  while (pos <= all.size()) {
    size_t end = all.find_first_of(": ", pos);
    if (end == std::string::npos) end = all.size();
    const std::string item = all.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty() || item.find("libgpumemrec") != std::string::npos) continue;
    if (!kept.empty()) kept += ':';
    kept += item;
  }
  if (kept.empty()) unsetenv("LD_PRELOAD");
  else setenv("LD_PRELOAD", kept.c_str(), 1);
}

}  // namespace

void dumper_init(Recorder* r) {
  // A relative GPUMEMREC_DIR is resolved now: a program that chdir()s before
  // its OOM must still write where it was started.
  std::string why;
  r->cfg.dir = absolute_dump_dir(r->cfg.dir, &why);
  if (!why.empty()) {
    DumpSignalGuard signal_guard;
    GM_WARN("{}", why);
  }
  void* p = mmap(nullptr, kWriteBufferBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    g_buffer.data = static_cast<char*>(p);
    g_buffer.size = kWriteBufferBytes - kRewriteBufferBytes;
    g_rewrite_buffer.data = g_buffer.data + g_buffer.size;
    g_rewrite_buffer.size = kRewriteBufferBytes;
  }
  g_symbolizer = new (std::nothrow) Symbolizer();
  g_frozen_ready = freeze_init(r->ring.capacity());
  writer_set_idle_hook(freeze_trim, kTrimIdleMs);
  if (!g_frozen_ready) GM_WARN("cannot reserve memory for the out-of-memory path: no bundles will be written");
  g_episodes.set_counting(!r->cfg.keep_recovered);
  if (!dump_memory_init(kDumpArenaBytes)) GM_DEBUG("no emergency memory for the dump path");
  warn_if_bundle_exceeds_retention(r->cfg);
}

void dumper_start(Recorder* r) {
  std::atexit(wait_for_dump_at_exit);
  if (r->cfg.dump_at_exit) {
    g_exit_recorder = r;
    std::atexit(exit_dump);
  }
  if (!r->cfg.follow_exec) drop_self_from_ld_preload();
}

void dumper_on_failure(const FailureInfo& f) {
  Recorder* r = recorder();
  if (!r || !g_buffer.data || !g_symbolizer || !g_frozen_ready) return;
  const int saved_errno = errno;
  const uint64_t episode_ns = r->cfg.episode_ms * 1000000ull;
  const uint64_t episode =
      g_episodes.on_failure(f, monotonic_ns(), device_live_bytes(f.device), episode_ns, &t_pending_request);
  if (episode == 0) {
    // Same episode (a framework retrying after freeing its cache): the
    // failure is in the ring as an event; the bundle shows the state at the
    // episode's first failure.
    GM_DEBUG("{} (same out-of-memory episode, no new bundle)", describe_failure(f));
  } else if (!freeze_for_writer(r, f, episode)) {
    // Both frozen sets wait for the writer (episodes in quick succession):
    // this failure is an event in their rings (counted, said at exit).
    g_episodes.missed();
    g_joined_failures.fetch_add(1, std::memory_order_relaxed);
    GM_DEBUG("{}; two bundles are being written, this failure is an event in them", describe_failure(f));
  }
  errno = saved_errno;
}

void dumper_on_success(HookId api, int device, uint64_t size) {
  Recorder* r = recorder();
  if (!r) return;
  const uint64_t live = device_live_bytes(device);
  if (g_episodes.on_success(&t_pending_request, current_tid(), api, device, size, monotonic_ns(),
                            live > size ? live - size : 0))
    writer_wake();  // the writer may be waiting for this verdict
}

void dumper_before_immediate_exit() {
  if (!writer_busy() || writer_is_this_thread()) return;
  g_program_ending.store(true, std::memory_order_release);  // the writer decides the verdict: fatal
  writer_wake();
  struct timespec ms = {0, 1000000};
  for (unsigned waited = 0; waited < kExitWaitMs && writer_busy(); ++waited) nanosleep(&ms, nullptr);
}

void dumper_before_unload() {
  // Not from our own dump path (NVML's library may dlclose inside a signal
  // dump, which holds the slot that the writer's jobs wait for).
  if (writer_is_this_thread() || dump_memory_active() || dump_slot_held_by_this_thread()) return;
  for (unsigned waited = 0; waited < kUnloadWaitMs; ++waited) {
    bool pending = false;
    for (auto& a : g_awaiting_symbols) pending = pending || a.load(std::memory_order_acquire);
    if (!pending) return;
    usleep(1000);
  }
}

bool dump_now(Recorder* r, DumpReason reason, const FailureInfo* f) {
  if (!r || !g_buffer.data || !g_symbolizer) return false;
  (void)f;
  if (!dump_slot_try_acquire(reason)) return false;  // the caller decides (dump_slot_last_try_was_busy)
  return freeze_and_write_here(r, reason);
}

bool dump_when_free(Recorder* r, DumpReason reason, unsigned max_ms) {
  const uint64_t deadline = monotonic_ns() + uint64_t(max_ms) * 1000000ull;
  for (;;) {
    if (dump_now(r, reason, nullptr)) return true;
    if (!dumper_busy()) return false;  // it ran and failed (and said why)
    const uint64_t now = monotonic_ns();
    if (now >= deadline || !wait_while_dumping(unsigned((deadline - now) / 1000000ull))) return false;
  }
}

bool dumper_busy() { return dump_slot_busy(); }

bool wait_while_dumping(unsigned max_ms) {
  const uint64_t start = monotonic_ns();
  if (!writer_wait_idle(max_ms)) return false;
  const uint64_t spent_ms = (monotonic_ns() - start) / 1000000ull;
  return dump_slot_wait_free(spent_ms >= max_ms ? 0 : int(max_ms - spent_ms), false);
}

void dumper_atfork_child() {
  // Another thread may have been logging at the fork: its lock is gone with it.
  log_reset_after_fork();
  // A dump in progress in another thread of the parent does not exist here;
  // the symbolizer it was using may be half-updated: start a new one.
  if (dump_slot_busy() || writer_busy()) {
    if (Symbolizer* fresh = new (std::nothrow) Symbolizer()) g_symbolizer = fresh;
  }
  writer_atfork_child();
  crash_wait_atfork_child();
  freeze_atfork_child();
  dump_slot_reset_after_fork();
  g_joined_failures.store(0);
  g_episodes.reset();
  g_dump_seq.store(0);
  g_program_ending.store(false);
  for (auto& a : g_awaiting_symbols) a.store(false);
  t_pending_request = PendingRequest{};
}

}  // namespace gpumemrec
