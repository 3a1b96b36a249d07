#include "shim/dump/dumper.h"

#include <sys/mman.h>
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
#include "shim/dump/episodes.h"
#include "shim/dump/retention_check.h"
#include "shim/dump/signal_guard.h"
#include "shim/dump/symbolizer.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

constexpr size_t kWriteBufferBytes = 256 * 1024;

// Prepared at start-up so the dump path needs no large allocation.
WriteBuffer g_buffer;
Symbolizer* g_symbolizer = nullptr;

Episodes g_episodes;
// Failures that met another out-of-memory bundle being written (they are
// events in it; said once, at exit, with the count).
std::atomic<uint64_t> g_joined_failures{0};
std::atomic<int> g_dump_seq{0};
std::atomic<bool> g_dir_warned{false};
Recorder* g_exit_recorder = nullptr;

// One line on stderr that needs no memory at all (when even formatting the
// warning failed).
void raw_stderr(const char* a, const char* b = "", const char* c = "") {
  for (const char* s : {"gpumemrec: warning: ", a, b, c, "\n"})
    if (fd_write_all(2, s, std::strlen(s)) != 0) return;
}

std::string describe_failure(const FailureInfo& f) {
  char buf[256];
  bool runtime_api = hook_info(f.api).library != Library::CUDA;
  std::snprintf(buf, sizeof buf, "%s(%llu bytes, %s) on device %d failed with %s (%d)%s", hook_name(f.api),
                (unsigned long long)f.size, format_bytes(f.size).c_str(), f.device,
                error_name(hook_backend(f.api), runtime_api, f.result), f.result,
                f.reason == DumpReason::kLimit      ? " [GPUMEMREC_LIMIT]"
                : f.reason == DumpReason::kFailAfter ? " [GPUMEMREC_FAIL_AFTER]"
                                                     : "");
  return buf;
}

// What the bundle is about: names, devices (asked on this thread: its
// current context is the failing device's) and NVML's process list.
BundleInput describe_bundle(Recorder* r, DumpReason reason, const FailureInfo* f, uint64_t failed_before) {
  BundleInput in;
  in.recorder = r;
  in.reason = reason;
  in.failure = f;
  in.backend = f ? hook_backend(f->api) : Backend::kCuda;
  in.created_ns = realtime_ns();
  in.failed_calls_before_dump = failed_before;
  try {
    in.devices = query_devices(in.backend, f ? f->device : -1);
    if (in.backend == Backend::kCuda) in.gpu_processes = query_gpu_processes(f ? f->device : 0);
  } catch (...) {
  }
  return in;
}

// Claims a unique name (its temporary directory), writes the files there;
// true once renamed into place.
bool write_and_publish(int dirfd, BundleInput& in, std::string* why) {
  TmpBundle tmp(dirfd);
  if (!tmp.claim(in.created_ns, in.backend, g_dump_seq.fetch_add(1) + 1, why)) return false;
  in.bundle_name = tmp.name();
  dump_slot_note_tmp(dirfd, tmp.tmp_name().c_str());  // for exit() on this thread
  bool ok = false;
  try {
    ok = write_bundle(tmp.fd(), in, *g_symbolizer, g_buffer, why);
  } catch (const std::bad_alloc&) {
    *why = "out of memory while writing";
  } catch (const std::exception& e) {
    *why = std::string("error while writing (") + e.what() + ")";
  } catch (...) {
    *why = "unexpected error while writing";
  }
  return ok && tmp.publish(why);  // on failure ~TmpBundle removes the directory
}

// The last step: prune, then one line on stderr.
void report(int dirfd, const BundleInput& in, bool ok, const std::string& why) {
  const FailureInfo* f = in.failure;
  const Config& cfg = in.recorder->cfg;
  if (ok) {
    bool kept = true;
    try {
      kept = prune_bundles(dirfd, cfg, in.bundle_name);
    } catch (...) {
    }
    const std::string path = cfg.dir + "/" + in.bundle_name;
    if (!kept)
      GM_WARN("{}; its bundle was pruned: the earlier failures of this episode fill GPUMEMREC_MAX_DUMPS in {}",
              f ? describe_failure(*f) : std::string(dump_reason_name(in.reason)), cfg.dir);
    else if (f) GM_WARN("{}; bundle: {}", describe_failure(*f), path);
    else GM_WARN("{} dump written: {}", dump_reason_name(in.reason), path);
  } else if (f) {
    GM_WARN("{}; could not write the bundle: {} (nothing left behind)", describe_failure(*f), why);
  } else {
    GM_WARN("could not write the {} bundle: {} (nothing left behind)", dump_reason_name(in.reason), why);
  }
}

void warn_no_dir(const FailureInfo* f, const std::string& why) {
  if (g_dir_warned.exchange(true)) return;
  if (f) GM_WARN("{}; cannot write a bundle: {} (said once; carrying on)", describe_failure(*f), why);
  else GM_WARN("cannot write a bundle: {} (said once; carrying on)", why);
}

// The caller holds the dump slot; released here.
bool dump_with_slot(Recorder* r, DumpReason reason, const FailureInfo* f, uint64_t failed_before) {
  const int saved_errno = errno;
  bool ok = false;
  {
    // Writing may raise SIGXFSZ (RLIMIT_FSIZE) or SIGPIPE (stderr): never let
    // the program see them (signal_guard.h).
    DumpSignalGuard signal_guard;
    // From here on the shim's operator new may fall back to the emergency
    // arena when malloc fails (the host may be short of memory too).
    DumpMemoryScope memory_scope;
    int dirfd = -1;
    try {
      std::string why;
      dirfd = open_dump_dir(r->cfg.dir, &why);
      if (dirfd < 0) {
        warn_no_dir(f, why);
      } else {
        BundleInput in = describe_bundle(r, reason, f, failed_before);
        ok = write_and_publish(dirfd, in, &why);
        report(dirfd, in, ok, why);
      }
    } catch (...) {
      // Out of memory outside the file writing (names, messages): say so
      // without allocating (the temporary directory is already gone).
      ok = false;
      raw_stderr("could not write the ", dump_reason_name(reason), " bundle: out of memory (nothing left behind)");
    }
    dump_slot_release();
    if (dirfd >= 0) close(dirfd);
  }
  errno = saved_errno;
  return ok;
}

void exit_dump() {
  // Registered from our constructor, so it runs after the program's own
  // atexit handlers and static destructors: what is still live is a leak.
  // Not when exit() was called on the thread that is writing a bundle (a
  // signal handler that interrupted the dump): that dump never finishes.
  if (g_exit_recorder && !dump_slot_held_by_this_thread()) dump_when_free(g_exit_recorder, DumpReason::kExit, 10000);
}

// At exit a bundle may still be being written by another thread (a signal
// dump, or an out-of-memory dump in a thread the program did not join): wait
// for it (at most 10 s) so that exit never leaves a half-written bundle. If
// this thread is the one writing (exit() from a signal handler during the
// dump), waiting would be for ever: remove its temporary directory instead
// (system calls only).
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
  wait_while_dumping(10000);
  if (const uint64_t n = g_joined_failures.load(std::memory_order_relaxed)) {
    DumpSignalGuard signal_guard;  // stderr may be a pipe nobody reads any more
    GM_WARN("{} out-of-memory failure(s) came while another thread was writing a bundle; they are events in "
            "that bundle's ring only", n);
  }
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
    g_buffer.size = kWriteBufferBytes;
  }
  g_symbolizer = new (std::nothrow) Symbolizer();
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
  if (!r || !g_buffer.data || !g_symbolizer) return;
  const uint64_t now = monotonic_ns();
  const uint64_t episode_ns = r->cfg.episode_ms * 1000000ull;
  if (g_episodes.in_episode(now, episode_ns)) {
    // Same episode (a framework retrying after freeing its cache): the
    // failure is in the ring as an event; the bundle already shows the state
    // at the first failure.
    GM_DEBUG("{} (same out-of-memory episode, no new bundle)", describe_failure(f));
    return;
  }
  if (!dump_slot_try_acquire(f.reason)) {
    // Another bundle is being written. If it is this episode's, the failure
    // is a retry. A signal or exit dump: this failure still gets its bundle
    // after it. Another out-of-memory bundle: this failure is an event in it
    // (counted, said once at exit); it starts nothing, so the next failure
    // after that dump still gets its own bundle.
    if (g_episodes.in_episode(now, episode_ns)) return;
    if (!dump_slot_holder_is_failure() && dump_slot_wait_free(10000, true) && dump_slot_try_acquire(f.reason)) {
      dump_with_slot(r, f.reason, &f, g_episodes.start(monotonic_ns()));
      return;
    }
    g_episodes.missed();
    g_joined_failures.fetch_add(1, std::memory_order_relaxed);
    GM_DEBUG("{}; another thread is writing a bundle, this failure is an event in it", describe_failure(f));
    return;
  }
  const uint64_t failed_before = g_episodes.start(now);
  dump_with_slot(r, f.reason, &f, failed_before);
}

bool dump_now(Recorder* r, DumpReason reason, const FailureInfo* f) {
  if (!r || !g_buffer.data || !g_symbolizer) return false;
  if (!dump_slot_try_acquire(reason)) return false;  // the caller decides (dump_slot_last_try_was_busy)
  return dump_with_slot(r, reason, f, g_episodes.take_unreported());
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

bool wait_while_dumping(unsigned max_ms) { return dump_slot_wait_free(int(max_ms), false); }

void dumper_atfork_child() {
  // Another thread may have been logging at the fork: its lock is gone with it.
  log_reset_after_fork();
  // A dump in progress in another thread of the parent does not exist here;
  // the symbolizer it was using may be half-updated: start a new one.
  if (dump_slot_busy()) {
    if (Symbolizer* fresh = new (std::nothrow) Symbolizer()) g_symbolizer = fresh;
  }
  dump_slot_reset_after_fork();
  g_joined_failures.store(0);
  g_episodes.reset();
  g_dump_seq.store(0);
}

}  // namespace gpumemrec
