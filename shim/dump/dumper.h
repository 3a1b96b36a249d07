// Deciding when to dump, and making sure a dump can be written when memory
// is short: the directory is prepared at start-up, one thread dumps at a time
// (the dump slot: a compare-and-swap guard, the others keep running), the
// bundle is written under a temporary name and renamed when complete.
//
// A dump, step by step (docs/design.md, "Dumping"):
//   take the dump slot -> open the directory, name the bundle, make the
//   temporary directory (bundle_dir.h) -> write the files (bundle_writer.h:
//   snapshot, reconcile, one writer per file) -> publish: fsync, rename,
//   fsync the directory, prune, report one line -> release the slot.
#pragma once
#include <cstdint>
#include <memory>

#include "shim/base/tls.h"
#include "shim/dump/capture/framework_report.h"
#include "shim/dump/verdict/episodes.h"
#include "shim/record/failure.h"

namespace gpumemrec {

struct Recorder;

void dumper_init(Recorder* r);   // from start-up (lifecycle.cpp): buffers, symbolizer
void dumper_start(Recorder* r);  // from start-up: atexit, exec
// Every out-of-memory failure comes here (episode logic, then maybe a
// freeze, the bundle written by the writer thread).
void dumper_on_failure(const FailureInfo& f);

// This thread's request pending in an out-of-memory episode (episodes.h).
extern GM_TLS PendingRequest t_pending_request;
// After every successful allocation (hot path: one thread-local load): a
// thread with a pending request may have just retried it.
inline bool dumper_thread_has_pending() { return __builtin_expect(t_pending_request.episode != 0, 0); }
void dumper_on_success(HookId api, int device, uint64_t size);
// A framework's own out-of-memory (framework_oom.cpp): the report closes the
// open episode on its device as fatal at once and goes into that episode's
// bundle (0 returned); with no episode open (the framework refused before
// the driver: set_per_process_memory_fraction, XLA's arena) it gets a
// bundle of its own, reason framework_oom, written on this thread (1
// returned); -1 when nothing could be done.
// A report that names a retry handler (the program will catch the error
// and retry with less) leaves the episode open, held again (0 returned):
// dumper_framework_recovered closes it when the handler caught the error,
// else the hold's end does (fatal).
int dumper_on_framework_oom(std::shared_ptr<FrameworkReport> report);
// The framework's observer begins its report for `device`: the open episode
// there waits for it (Episodes::hold) up to the Python hook's time budget
// (GPUMEMREC_ROLES_BUDGET_MS, four times: the walk's wall-time cap, then
// the rest of the report)
// plus GPUMEMREC_EPISODE_MS. 0: an episode waits; 1: none is open (the
// report will make a framework_oom bundle).
int dumper_on_framework_begin(int device);
// The program's `handler` caught the framework's error on `device`, on this
// thread, and retries with less: the open episode there, held by the
// framework's report, is recovered now (Episodes::close_by_handler). False
// when none is open and held there (decided already).
bool dumper_framework_recovered(int device, const char* handler);
// Writes a bundle now (signal thread, exit); false if another dump runs or
// writing failed.
bool dump_now(Recorder* r, DumpReason reason, const FailureInfo* f);

// _exit / _Exit (hooks/exit_hook.cpp): a bundle being written is finished
// first (while its writer makes progress, at most GPUMEMREC_EXIT_WAIT_S:
// exit_wait.h; its verdict: fatal). Async-signal-safe: no lock, no
// allocation (atomics, sem_post, nanosleep).
void dumper_before_immediate_exit();
// dlclose (hooks/dlclose_hook.cpp): waits (at most kUnloadWaitMs) until the
// stacks of frozen bundles are symbolized, so that a library unloaded right
// after an out-of-memory still names its frames.
constexpr unsigned kUnloadWaitMs = 5000;
void dumper_before_unload();

// True while some thread writes a bundle.
bool dumper_busy();
// Waits while some thread writes a bundle, at most max_ms; true once free.
bool wait_while_dumping(unsigned max_ms);

void dumper_atfork_child();

}  // namespace gpumemrec
