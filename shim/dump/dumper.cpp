#include "shim/dump/dumper.h"

#include <pthread.h>
#include <signal.h>
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
#include "shim/base/absolute_dir.h"
#include "shim/dump/place/bundle_dir.h"
#include "shim/dump/place/bundle_name.h"
#include "shim/dump/write/bundle_writer.h"
#include "shim/base/dump_memory.h"
#include "shim/dump/dump_slot.h"
#include "shim/dump/crash_wait.h"
#include "shim/dump/capture/deferred.h"
#include "shim/dump/dump_job.h"
#include "shim/dump/exit_wait.h"
#include "shim/dump/signal_dump.h"
#include "shim/record/device_reset.h"
#include "shim/dump/verdict/episodes.h"
#include "shim/dump/capture/freeze.h"
#include "shim/dump/place/retention_check.h"
#include "shim/dump/writer_thread.h"
#include "shim/base/signal_guard.h"
#include "shim/dump/query/symbolizer.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

GM_TLS PendingRequest t_pending_request;

namespace {

constexpr size_t kWriteBufferBytes = 256 * 1024;
constexpr size_t kRewriteBufferBytes = 32 * 1024;  // the tail of the same mapping

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
std::atomic<bool> g_exit_wait_registered{false};
std::atomic<bool> g_exit_said{false};
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
bool nothing_being_written() { return !writer_busy() && !dump_slot_busy(); }
bool slot_free() { return !dump_slot_busy(); }
bool writer_has_another_job() { return writer_jobs() > 1; }

// A job's frozen events are complete only once the handed-over ring buffers
// are copied (freeze.h): on the thread that writes, never the failing one.
bool run_job(int set, bool on_writer) {
  freeze_collect(set, &job_of(set).frozen);
  if (job_of(set).frozen.live_unavailable)
    raw_warning("this bundle lists no live allocation: the host would not map memory for the copy of the live table");
  else if (job_of(set).frozen.live_after_freeze)
    raw_warning("this bundle's live allocations may include changes made after the failure: ",
                "the host would not map memory to keep them apart");
  return run_dump_job(job_of(set), services(), on_writer);
}

void writer_job_main(int set) {
  run_job(set, true);
  crash_wait_disarm(writer_has_another_job);
}

// The device a dump without a failure is about: a framework_oom bundle's is
// the framework's (its held report), else none (-1).
int device_of(DumpReason reason) {
  return reason == DumpReason::kFrameworkOom ? framework_report_device(0) : -1;
}

// Fills the job of a frozen set: what failed, the device's numbers (asked on
// this thread: the device query must run on the failing thread, whose
// context is the device's), then the freeze. False (set given back) when the
// state could not be copied.
bool prepare_job(Recorder* r, int set, DumpReason reason, const FailureInfo* f, uint64_t episode,
                 const DeviceReport* devices = nullptr) {
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
    if (devices) job.devices = *devices;
    else job.devices = query_devices(f ? hook_backend(f->api) : Backend::kCuda, f ? f->device : device_of(reason));
  } catch (...) {
  }
  // A signal bundle serves every request counted before its freeze.
  if (reason == DumpReason::kSignal) job.signal_requests = signal_requests_take();
  const char* why = "";
  if (!freeze(r, set, &job.frozen, &why)) {
    freeze_done(set);
    if (!g_freeze_warned.exchange(true)) raw_warning("cannot write a bundle: cannot copy the recorder's state: ", why);
    return false;
  }
  job.live_at_freeze.read();
  job.failed_before = g_episodes.take_unreported();
  return true;
}

void post_to_writer(int set) {
  g_awaiting_symbols[set].store(true, std::memory_order_release);
  job_of(set).awaiting_symbols = &g_awaiting_symbols[set];
  writer_post(writer_job_main, set);
  crash_wait_arm(writer_idle);  // after the post: see crash_wait_disarm
}

void wait_for_dump_at_exit();

// The writer thread, started at the first failure that needs it. The
// at-exit wait is registered again then: atexit() from our constructor
// (dumper_start) ran before glibc's __libc_start_main registered ld.so's
// _dl_fini (csu/libc-start.c), so exit() reaches it only from _dl_fini,
// after the destructors of every library loaded after us, those the writer
// uses included (libdw dlopens libdebuginfod, which pulls in libcurl and
// libcrypto: OpenSSL's cleanup freed its locks and the writer crashed in
// its init). Registered now, it runs before any library is finalized. Not
// again in a forked child: it inherits the registration.
bool start_writer() {
  if (!writer_start()) return false;
  if (!g_exit_wait_registered.exchange(true)) std::atexit(wait_for_dump_at_exit);
  return true;
}

// Failures that found both sets taken (deferred.h).
DeferredFailures g_deferred;
constexpr unsigned kMaxRequeues = 16;
static_assert(kPooledSets + DeferredFailures::kSlots < kWriterQueue, "a job for every set and record");
static_assert(kPooledSets + DeferredFailures::kSlots < Episodes::kWatched, "every episode in the works watched");

// A failure that got no bundle of its own: counted for the next bundle and
// for the line at exit.
void count_missed() {
  g_episodes.missed();
  g_joined_failures.fetch_add(1, std::memory_order_relaxed);
}

void missed_failure(const FailureInfo& f, const char* why) {
  count_missed();
  GM_DEBUG("{}; {}: this failure is an event in other bundles", describe_failure(f), why);
}

// The failure that opened `episode` got no bundle: counted now, or (count
// mode) when its episode closes other than recovered: a recovered one is
// owed no bundle and is counted once, as recovered (a writer slowed by a
// sanitizer made both lines count one failure).
void missed_opener(const FailureInfo& f, uint64_t episode, const char* why) {
  if (g_episodes.miss_unless_recovered(episode)) {
    GM_DEBUG("{}; {}: counted if its episode does not recover", describe_failure(f), why);
    return;
  }
  missed_failure(f, why);
}

bool recovered_unkept(const Verdict& v) {
  const Recorder* r = recorder();
  return r && !r->cfg.keep_recovered && v.outcome == Outcome::kRecovered;
}
bool recovered_unkept(uint64_t episode) { return recovered_unkept(g_episodes.verdict(episode)); }

// A deferred record may give way to a newer failure once its episode
// recovered: counted already (count mode), or a recovered bundle lost
// (keep mode) rather than a possibly fatal one.
bool replaceable(uint64_t episode) { return g_episodes.verdict(episode).outcome == Outcome::kRecovered; }

// The writer's job for a deferred failure: freeze now (into a set given
// back by the jobs before this one) and write as any failure's job.
void deferred_job_main(int slot) {
  DeferredFailure* d = g_deferred.take(slot);
  if (!d) return;
  Recorder* r = recorder();
  if (!r || recovered_unkept(d->episode)) {
    if (r) say_recovered_unwritten(d->failure, g_episodes.verdict(d->episode));
  } else if (const int set = freeze_acquire(); set < 0) {
    // The sets are held by jobs posted after this one: after them, then.
    if (d->requeued < kMaxRequeues) {
      g_deferred.requeue(slot);
      writer_post(deferred_job_main, slot);
      return;
    }
    missed_opener(d->failure, d->episode, "no frozen set came free for it");
  } else if (!prepare_job(r, set, d->failure.reason, &d->failure, d->episode, &d->devices)) {
    missed_opener(d->failure, d->episode, "its state could not be copied");
  } else {
    const uint64_t now = realtime_ns();
    job_of(set).frozen_late_ns = now > d->failure.time_ns ? now - d->failure.time_ns : 1;
    g_deferred.done(slot);  // the job (which watches the episode now) has what it needs
    writer_job_main(set);
    return;
  }
  g_episodes.unwatch(d->episode);
  g_deferred.done(slot);
  crash_wait_disarm(writer_has_another_job);
}

bool defer_failure(const FailureInfo& f, uint64_t episode) {
  DeferredFailure d;
  d.failure = f;
  d.episode = episode;
  try {
    DumpMemoryScope memory_scope;
    d.devices = query_devices(hook_backend(f.api), f.device);
  } catch (...) {
  }
  const DeferredFailures::Put p = g_deferred.put(d, replaceable);
  if (p.slot < 0) return false;
  if (p.replaced) {
    // Its verdict read as it is unwatched, not after: the record may have
    // waited behind more than Episodes::kHistory closed episodes (a writer
    // starved of CPU while the program recovers every few ms), and an
    // unwatched episode that old reads unknown, which counted a recovered
    // episode as missed (count mode: the "got no bundle" line at exit).
    if (!recovered_unkept(g_episodes.release(p.evicted)))
      count_missed();  // keep mode: that recovered bundle is lost
    return true;  // its job is posted already
  }
  writer_post(deferred_job_main, p.slot);
  crash_wait_arm(writer_idle);
  return true;
}

// A new episode's first failure: freeze, hand the job to the writer and
// return (or defer it: see Deferred). Without a writer thread the bundle is
// written here (the dump slot taken without waiting). False when the
// failure gets no bundle.
bool freeze_for_writer(Recorder* r, const FailureInfo& f, uint64_t episode) {
  const int set = freeze_acquire();
  if (set < 0) {
    // The sets are busy, so a writer runs (or failing threads write without
    // one, which nothing can wait for).
    if (start_writer() && defer_failure(f, episode)) return true;
    g_episodes.unwatch(episode);  // watched since on_failure opened it
    return false;
  }
  if (!prepare_job(r, set, f.reason, &f, episode)) {
    g_episodes.unwatch(episode);
    return false;
  }
  if (start_writer()) {
    post_to_writer(set);
    return true;
  }
  if (!dump_slot_try_acquire(f.reason)) {
    g_episodes.unwatch(episode);
    freeze_done(set);
    return false;
  }
  return run_job(set, false);
}

// While this thread writes a bundle itself (signal, exit and framework
// dumps), a SIGTERM waits for the bundle, as it waits for the writer
// thread's (crash_wait.h): blocked on this thread, so that a process-
// directed SIGTERM goes to another thread, whose crash-wait handler waits
// while the bundle makes progress, or (one thread) stays pending; when the
// bundle is done the mask is restored and a pending SIGTERM ends the process
// as it would have. Found: torchrun's SIGTERM to ranks writing their exit
// bundles left empty .tmp- directories (simulate.torchrun_fsdp2_ws4).
class InlineDumpTermWait {
 public:
  InlineDumpTermWait() {
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    masked_ = pthread_sigmask(SIG_BLOCK, &term, &old_) == 0;
    crash_wait_arm(nothing_being_written);
  }
  ~InlineDumpTermWait() {
    crash_wait_disarm(writer_busy_now);  // the writer thread's own work keeps the handlers
    if (masked_) pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  InlineDumpTermWait(const InlineDumpTermWait&) = delete;
  InlineDumpTermWait& operator=(const InlineDumpTermWait&) = delete;

 private:
  static bool writer_busy_now() { return writer_busy(); }
  sigset_t old_;
  bool masked_ = false;
};

// Signal and exit dumps, written by the calling thread, which holds the slot
// (and so the inline set, freeze.h).
bool freeze_and_write_here(Recorder* r, DumpReason reason) {
  InlineDumpTermWait term_waits;
  // A destroyed context's entries leave the live set before any bundle but
  // the exit bundle, "what the program never freed" (device_reset.h).
  if (reason != DumpReason::kExit) apply_device_resets(-1);
  if (!prepare_job(r, kInlineSet, reason, nullptr, 0)) {
    dump_slot_release();
    return false;
  }
  return run_job(kInlineSet, false);
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
  // It runs before the constructor's registration of wait_for_dump_at_exit
  // (registered earlier; the one made at the writer's start has run by now):
  // it decides the open episode itself, or it would wait for a writer
  // waiting for that.
  if (g_exit_recorder && !dump_slot_held_by_this_thread()) {
    begin_program_end();
    // Another dump in progress first (as long as it makes progress); the
    // slot may be taken again between the wait and the try: a few rounds.
    for (int round = 0; round < 8; ++round) {
      if (dump_now(g_exit_recorder, DumpReason::kExit, nullptr) || !dumper_busy()) return;
      if (exit_wait(slot_free, "at exit") != ExitWaitEnd::kDone) return;
    }
  }
}

// At exit the writer may still be writing a bundle or waiting for its
// verdict: the program is ending, so an open episode is fatal; wait for the
// writer while it makes progress (exit_wait.h) so that exit never leaves a
// half-written bundle (given up: the temporary directory is removed). If
// this thread is the one writing (exit() from a signal handler during an
// inline dump), waiting would be for ever: remove its temporary directory
// instead (system calls only).
void wait_for_dump_at_exit() {
  if (dump_slot_held_by_this_thread()) {
    close_tmp_gate(0);  // this thread is the only writer: nothing to wait for
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
  exit_wait(nothing_being_written, "at exit");
  if (g_exit_said.exchange(true)) return;  // registered twice: see start_writer
  DumpSignalGuard signal_guard;  // stderr may be a pipe nobody reads any more
  if (const uint64_t n = g_joined_failures.load(std::memory_order_relaxed) + g_episodes.missed_at_close())
    GM_WARN("{} out-of-memory failure(s) got no bundle of their own: they came while earlier bundles were "
            "being written (they are events in those bundles' rings)", n);
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
  g_frozen_ready = freeze_init(&r->ring);
  writer_set_idle_hook(freeze_trim, kTrimIdleMs);
  exit_wait_init(unsigned(r->cfg.exit_wait_s), r->cfg.dir.c_str());
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
  apply_device_resets(-1);  // the failing device's went before the failure was recorded
  const uint64_t episode_ns = r->cfg.episode_ms * 1000000ull;
  const uint64_t episode =
      g_episodes.on_failure(f, monotonic_ns(), device_live_bytes(f.device), episode_ns, &t_pending_request);
  if (episode == 0) {
    // Same episode (a framework retrying after freeing its cache): the
    // failure is in the ring as an event; the bundle shows the state at the
    // episode's first failure.
    GM_DEBUG("{} (same out-of-memory episode, no new bundle)", describe_failure(f));
  } else if (episode == Episodes::kUnwatched) {
    missed_failure(f, "too many threads opened episodes at once");
  } else if (!freeze_for_writer(r, f, episode)) {
    // No set and no room to defer it (a burst of episodes while the writer
    // is slow): an event in the other bundles' rings (counted, said at exit).
    missed_opener(f, episode, "other bundles are being written");
  } else {
    g_episodes.returned(episode, monotonic_ns());  // the freeze's time is not the program's
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
  exit_wait(writer_idle, "at _exit");
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

// A framework_oom bundle (the framework's report is held: framework_report_put).
// Frozen on the framework's thread, which is the state at its failure, and
// written by the writer thread as an out-of-memory bundle is, so the
// framework's thread returns at once. Python's OOM observer runs on the
// thread that failed; a program that catches the error and goes on must not
// wait for our files. Only when no frozen set is free (other bundles being
// written) or no writer thread can run is it written here, once the other
// bundle is done (as long as its writer makes progress: at most 10 s a round;
// the slot may be taken again between the wait and the try).
static bool framework_dump(Recorder* r) {
  const int set = freeze_acquire();
  if (set >= 0 && start_writer()) {
    if (!prepare_job(r, set, DumpReason::kFrameworkOom, nullptr, 0)) return false;
    job_of(set).framework = framework_report_take(0);
    post_to_writer(set);
    return true;
  }
  if (set >= 0) freeze_done(set);
  for (int round = 0; round < 8; ++round) {
    if (dump_now(r, DumpReason::kFrameworkOom, nullptr)) return true;
    if (!dumper_busy() || !wait_while_dumping(kStallMs)) return false;
  }
  return false;
}

// The open episode waits for the framework's word (Episodes::hold) up to
// four times the Python hook's time budget (the walk stops at three of wall
// time on a loaded machine: roles.py, WALL_FACTOR; then the rest of the
// report), plus the episode window.
static bool hold_for_framework(const Recorder* r, uint64_t episode) {
  const uint64_t wait_ms = 4 * r->cfg.roles_budget_ms + r->cfg.episode_ms;
  return episode && g_episodes.hold(episode, monotonic_ns() + wait_ms * 1000000ull);
}

int dumper_on_framework_oom(std::shared_ptr<FrameworkReport> report) {
  Recorder* r = recorder();
  if (!r || !g_buffer.data || !g_symbolizer || !g_frozen_ready) return -1;
  const int saved_errno = errno;
  int ret = -1;
  // Held before the verdict is decided: the writer, woken by the verdict,
  // finds it (dump_job.cpp, fill_input and the late verdict).
  if (const uint64_t episode = g_episodes.open_on(int(report->fields.device))) {
    report->episode = episode;
    const bool handled = !report->fields.retry_handler.empty();
    framework_report_put(std::move(report));
    // A handler's catch decides it (dumper_framework_recovered); the hold,
    // renewed, bounds the wait for it.
    if (handled ? hold_for_framework(r, episode) : g_episodes.close_fatal(episode, FatalCause::kFramework))
      writer_wake();
    ret = 0;
  } else {
    report->episode = 0;
    framework_report_put(std::move(report));
    ret = framework_dump(r) ? 1 : -1;
    // Not left behind when the bundle could not be written. Only then: after
    // a success the held slot may already be another thread's report.
    if (ret < 0) framework_report_take(0);
  }
  errno = saved_errno;
  return ret;
}

int dumper_on_framework_begin(int device) {
  Recorder* r = recorder();
  if (!r) return 1;
  return hold_for_framework(r, g_episodes.open_on(device)) ? 0 : 1;
}

bool dumper_framework_recovered(int device, const char* handler) {
  if (!recorder()) return false;
  const uint64_t live = device_live_bytes(device);
  if (!g_episodes.close_by_handler(device, handler, current_tid(), monotonic_ns(), live)) return false;
  writer_wake();
  return true;
}

bool dump_now(Recorder* r, DumpReason reason, const FailureInfo* f) {
  if (!r || !g_buffer.data || !g_symbolizer) return false;
  (void)f;
  if (!dump_slot_try_acquire(reason)) return false;  // the caller decides (dump_slot_last_try_was_busy)
  return freeze_and_write_here(r, reason);
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
  exit_wait_atfork_child();
  freeze_atfork_child();
  dump_slot_reset_after_fork();
  g_joined_failures.store(0);
  g_episodes.reset();
  g_dump_seq.store(0);
  g_program_ending.store(false);
  g_exit_said.store(false);
  for (auto& a : g_awaiting_symbols) a.store(false);
  g_deferred.reset();
  framework_report_atfork_child();
  t_pending_request = PendingRequest{};
}

}  // namespace gpumemrec
