#include "shim/dump/dump_job.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "common/format.h"
#include "shim/base/clock.h"
#include "shim/base/dump_progress.h"
#include "shim/base/fd_io.h"
#include "shim/base/log.h"
#include "shim/dump/place/bundle_dir.h"
#include "shim/dump/crash_wait.h"
#include "shim/base/dump_memory.h"
#include "shim/dump/dump_slot.h"
#include "shim/base/signal_guard.h"
#include "shim/dump/query/symbolizer.h"
#include "shim/dump/verdict/verdict_text.h"
#include "shim/dump/write/bundle_writer.h"
#include "shim/dump/writer_thread.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

std::atomic<bool> g_dir_warned{false};
std::atomic<bool> g_recovered_said{false};

// A bundle written (published) and what is kept of it until its verdict.
struct Written {
  int dirfd = -1;      // the dump directory
  int bundle_fd = -1;  // the bundle directory
  std::string name, tmp;
  FailureInfo failure;  // in.failure points here (the job's copy may be reused)
  BundleInput in;
  BundleBuild build;
  bool kept = true;  // not pruned
  ~Written() {
    if (bundle_fd >= 0) close(bundle_fd);
    if (dirfd >= 0) close(dirfd);
  }
};

const Config& config(const DumpJob& job) { return job.recorder->cfg; }

// The verdict of the job's episode, deciding it when its time has come (the
// episode's deadline, exit, a fatal signal). Waits until it is known or
// until `until_ns` (monotonic; 0 = as long as it takes).
Verdict wait_for_verdict(uint64_t episode, const Config& cfg, const DumpServices& s, uint64_t until_ns) {
  const uint64_t episode_ns = cfg.episode_ms * 1000000ull;
  for (;;) {
    const uint64_t now = monotonic_ns();
    // A deadline already passed decides first: the writer may notice a
    // signal or the exit late (it was writing), after the window had closed.
    s.episodes->expire(now, episode_ns, false, FatalCause::kNoRetry);
    if (const int sig = crash_wait_signal()) s.episodes->expire(now, episode_ns, true, FatalCause::kSignal, sig);
    if (s.program_ending->load(std::memory_order_acquire))
      s.episodes->expire(now, episode_ns, true, FatalCause::kExit);
    const Verdict v = s.episodes->verdict(episode);
    if (v.outcome != Outcome::kUnknown) return v;
    // Closed since the line above (a retry succeeded just then): read again.
    if (!s.episodes->is_open(episode)) return s.episodes->verdict(episode);
    uint64_t deadline = s.episodes->deadline_ns(episode_ns);
    if (until_ns) {
      if (now >= until_ns) return v;
      if (until_ns < deadline) deadline = until_ns;
    }
    writer_wait(deadline);
  }
}

void warn_no_dir(const DumpJob& job, const std::string& why) {
  if (g_dir_warned.exchange(true)) return;
  if (job.has_failure)
    GM_WARN("{}; cannot write a bundle: {} (said once; carrying on)", describe_failure(job.failure), why);
  else GM_WARN("cannot write a bundle: {} (said once; carrying on)", why);
}

void fill_input(const DumpJob& job, const DumpServices& s, const Verdict& v, Written* w) {
  BundleInput& in = w->in;
  w->failure = job.failure;
  in.recorder = job.recorder;
  in.reason = job.reason;
  in.failure = job.has_failure ? &w->failure : nullptr;
  in.backend = job.has_failure ? hook_backend(job.failure.api) : Backend::kCuda;
  in.created_ns = job.created_ns;
  in.failed_calls_before_dump = job.failed_before;
  in.devices = job.devices;
  in.live_at_freeze = job.live_at_freeze;
  in.verdict = v;
  in.episode_ms = config(job).episode_ms;
  in.recovered = s.episodes->recovered();
  in.awaiting_symbols = job.awaiting_symbols;
  in.frozen_after_failure_ns = job.frozen_late_ns;
  if (job.reason == DumpReason::kSignal) in.signal_requests = job.signal_requests;
  if (job.reason == DumpReason::kFrameworkOom) {
    in.framework = job.framework ? std::move(job.framework) : framework_report_take(0);
    in.verdict.outcome = Outcome::kFatal;
    in.verdict.cause = FatalCause::kFramework;
  } else if (job.has_failure) {
    in.framework = framework_report_take(job.episode);
  } else if (job.reason == DumpReason::kExit || job.reason == DumpReason::kSignal) {
    in.framework = framework_exit_get();  // the hook's digest at the interpreter's exit, if any
  }
  try {
    if (in.backend == Backend::kCuda) in.gpu_processes = query_gpu_processes(std::max(bundle_device(in), 0));
  } catch (...) {
  }
}

// Claims a name, writes the files in its temporary directory, renames it
// into place. The frozen memory and the dump slot are given back here,
// written or not.
// The frozen set is not needed once the files are written: given back at
// once (the job, which lives in it, is not read after this).
void release_set(const DumpJob& job, bool* released) {
  if (*released) return;
  if (job.awaiting_symbols) job.awaiting_symbols->store(false, std::memory_order_release);
  *released = true;
  freeze_done(job.set);
}

bool write_and_publish(const DumpJob& job, const DumpServices& s, Written* w, bool* released, std::string* why) {
  TmpBundle tmp(w->dirfd);
  bool ok = tmp.claim(job.created_ns, w->in.backend, s.seq->fetch_add(1) + 1, why);
  if (ok) {
    w->in.bundle_name = tmp.name();
    dump_slot_note_tmp(w->dirfd, tmp.tmp_name().c_str());  // for exit() on this thread, and the exit wait
    dump_progress_new_bundle();
    try {
      ok = write_bundle(tmp.fd(), w->in, job.frozen, *s.symbolizer, s.buffer, &w->build, why);
    } catch (const std::bad_alloc&) {
      ok = false, *why = "out of memory while writing";
    } catch (const std::exception& e) {
      ok = false, *why = std::string("error while writing (") + e.what() + ")";
    } catch (...) {
      ok = false, *why = "unexpected error while writing";
    }
    ok = ok && tmp.publish(why);
  }
  if (ok) {
    w->bundle_fd = tmp.take_fd();
    w->name = tmp.name();
    w->tmp = tmp.tmp_name();
  } else {
    tmp.discard();
  }
  release_set(job, released);
  dump_slot_release();
  return ok;
}

// A recovered episode's bundle, not kept (GPUMEMREC_RECOVERED=count): back
// to its temporary name first, so no reader sees it half-removed.
void remove_published(Written& w) {
  if (renameat(w.dirfd, w.name.c_str(), w.dirfd, w.tmp.c_str()) == 0) remove_bundle_dir(w.dirfd, w.tmp.c_str());
  fsync(w.dirfd);
}

void report(const Written& w, const std::string& why, bool ok) {
  const BundleInput& in = w.in;
  const Config& cfg = in.recorder->cfg;
  const std::string what = in.failure ? describe_failure(*in.failure) : std::string(dump_reason_name(in.reason));
  if (!ok) {
    GM_WARN("{}; could not write the bundle: {} (nothing left behind)", what, why);
    return;
  }
  const std::string path = cfg.dir + "/" + w.name;
  std::string verdict;
  if (in.failure) {
    const Verdict& v = in.verdict;
    verdict = v.outcome == Outcome::kRecovered ? recovery_phrase(v.recovery)
              : v.outcome == Outcome::kFatal   ? std::string("not recovered (fatal)")
                                               : std::string("outcome unknown so far");
    verdict += "; ";
  }
  if (!w.kept) {
    GM_WARN("{}; {}its bundle was pruned: the earlier bundles of this burst fill GPUMEMREC_MAX_DUMPS / "
            "GPUMEMREC_MAX_TOTAL_MB in {}", what, verdict, cfg.dir);
    return;
  }
  uint64_t bytes = 0;
  std::string oversize;
  if (bundle_exceeds_total_cap(w.dirfd, w.name, cfg, &bytes))
    oversize = " (" + format_bytes(bytes) + ", more than GPUMEMREC_MAX_TOTAL_MB=" + std::to_string(cfg.max_total_mb) +
               " on its own: kept until the next bundle)";
  if (in.failure) GM_WARN("{}; {}bundle: {}{}", what, verdict, path, oversize);
  else GM_WARN("{} dump written: {}{}", what, path, oversize);
}

// The verdict came after the bundle was written: its files again, or the
// bundle removed.
void apply_late_verdict(const DumpServices& s, const Verdict& v, Written& w) {
  if (v.outcome == Outcome::kRecovered && !w.in.recorder->cfg.keep_recovered) {
    remove_published(w);
    say_recovered_unwritten(w.failure, v);
    return;
  }
  w.in.verdict = v;
  std::string why;
  bool ok = false;
  try {
    ok = rewrite_verdict_files(w.bundle_fd, w.in, w.build, s.rewrite_buffer, &why);
  } catch (...) {
    why = "out of memory";
  }
  if (!ok) GM_WARN("could not write the verdict ({}) into {}: {}", outcome_name(v.outcome), w.name, why);
  else if (w.kept) s.episodes->clear_recovered(w.in.recovered.up_to);
  report(w, why, true);
}

bool write_job(const DumpJob& job, const DumpServices& s, bool on_writer, Verdict v, bool* released) {
  const bool has_failure = job.has_failure;
  const uint64_t episode = job.episode;
  const Config& cfg = config(job);
  Written w;
  std::string why;
  w.dirfd = open_dump_dir(config(job).dir, &why);
  if (w.dirfd < 0) {
    warn_no_dir(job, why);
    dump_slot_release();
    return false;
  }
  fill_input(job, s, v, &w);
  const bool ok = write_and_publish(job, s, &w, released, &why);  // `job` is gone after this
  if (!ok) {
    report(w, why, false);
    return false;
  }
  try {
    w.kept = prune_bundles(w.dirfd, cfg, w.name);
  } catch (...) {
  }
  if (has_failure && v.outcome == Outcome::kUnknown && on_writer) {
    const Verdict late = wait_for_verdict(episode, cfg, s, 0);
    // The framework's report, when it closed the episode after the bundle
    // was written (it is held before the verdict is decided).
    if (!w.in.framework) w.in.framework = framework_report_take(episode);
    apply_late_verdict(s, late, w);
    return true;
  }
  if (w.kept) s.episodes->clear_recovered(w.in.recovered.up_to);
  report(w, why, true);
  return true;
}

}  // namespace

void raw_warning(const char* a, const char* b, const char* c) {
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

void say_recovered_unwritten(const FailureInfo& f, const Verdict& v) {
  if (g_recovered_said.exchange(true)) return;
  GM_WARN("{}; {}; recovered failures are counted, not dumped (GPUMEMREC_RECOVERED=count; said once)",
          describe_failure(f), recovery_phrase(v.recovery));
}

bool run_dump_job(const DumpJob& job, const DumpServices& s, bool on_writer) {
  const uint64_t episode = job.episode;
  const DumpReason reason = job.reason;
  bool released = false;
  const int saved_errno = errno;
  bool ok = false, wrote = true;
  {
    // Writing may raise SIGXFSZ (RLIMIT_FSIZE) or SIGPIPE (stderr): never let
    // the program see them (signal_guard.h).
    DumpSignalGuard signal_guard;
    // The shim's operator new may fall back to the emergency arena when
    // malloc fails (the host may be short of memory too).
    DumpMemoryScope memory_scope;
    try {
      Verdict v = job.has_failure ? s.episodes->verdict(job.episode) : Verdict{};
      if (job.has_failure && on_writer && !config(job).keep_recovered)
        v = wait_for_verdict(episode, config(job), s, monotonic_ns() + kVerdictGraceMs * 1000000ull);
      if (v.outcome == Outcome::kRecovered && !config(job).keep_recovered) {
        // Counted by the episodes (GPUMEMREC_RECOVERED=count).
        wrote = false;
        if (!on_writer) dump_slot_release();
        say_recovered_unwritten(job.failure, v);
        ok = true;
      } else {
        // One bundle is written at a time; signal requests go first.
        while (on_writer && !dump_slot_try_acquire(job.reason)) {
          writer_set_parked(true);  // polling, not progress (exit_wait.h)
          dump_slot_wait_free(-1, true);
          writer_set_parked(false);
        }
        ok = write_job(job, s, on_writer, v, &released);
      }
    } catch (...) {
      // Out of memory outside the file writing (names, messages): say so
      // without allocating (the temporary directory is already gone).
      if (dump_slot_held_by_this_thread()) dump_slot_release();
      raw_warning("could not write the ", dump_reason_name(reason), " bundle: out of memory (nothing left behind)");
    }
  }
  if (episode) s.episodes->unwatch(episode);
  if (!released) release_set(job, &released);  // the job is not to be read after this
  // A bundle was made: the model, the symbolizer's session and the JSON
  // buffers were freed; give the heap's free pages back (the program may be
  // short of memory). Not for a recovered episode dropped unwritten: that
  // happens at every training step of a job that recovers each step.
  if (on_writer && wrote) malloc_trim(0);
  errno = saved_errno;
  return ok;
}

}  // namespace gpumemrec
