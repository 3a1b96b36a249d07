// Start-up, fork handlers and the start order: the one place that knows
// every layer (hooks -> dump -> record -> base).
//
// Lifetime hazards:
// - A hook can run before this constructor (another library's constructor
//   may allocate GPU memory): the recorder initialises itself lazily from any
//   hook, without loader calls. This constructor then does the loader work
//   (libunwind, Python look-up, NVML is left to dump time) and starts what
//   needs threads or handlers.
// - fork: locks of ours that another thread may hold at the fork are taken
//   in `prepare` and released in both processes; what cannot be taken
//   (a dump in progress on another thread) is reset in the child.
#include <pthread.h>

#include <cerrno>

#include "shim/base/loader_guard.h"
#include "shim/base/log.h"
#include "shim/base/privilege.h"
#include "shim/base/python_hook_env.h"
#include "shim/base/simulated_libraries.h"
#include "shim/dump/capture/peak_keeper.h"
#include "shim/dump/dumper.h"
#include "shim/dump/signal_dump.h"
#include "shim/dump/status/status_publisher.h"
#include "shim/dump/write/launcher_env.h"
#include "shim/hooks/exit_hook.h"
#include "shim/record/python_stack.h"
#include "shim/record/recorder.h"
#include "shim/record/stack_capture.h"

namespace gpumemrec {
namespace {

// The peak keeper's pass (an ASan build only: peak_keeper.h), our dlopen in
// flight on the writer (loader_guard.h), then our locks.
void atfork_prepare() {
  peak_keeper_atfork_prepare();
  status_atfork_prepare();
  loader_guard_before_fork();
  recorder_atfork_prepare();
}

void atfork_parent() {
  recorder_atfork_parent();
  status_atfork_parent();
  peak_keeper_atfork_parent();
}

// Order matters: the recorder's tables are usable again before the dumper
// (which may log) and the signal thread (which may dump) are re-made.
void atfork_child() {
  recorder_atfork_child();
  dumper_atfork_child();
  status_atfork_child();  // before the keeper's thread is made again: it updates the child's region
  peak_keeper_atfork_child();
  signal_dump_atfork_child();
}

// What the status region says of the process (shim/dump/status/).
bool start_status(Recorder* r) {
  StatusIdentity id;
  const LauncherIdentity l = launcher_identity_from_environ();
  if (l.world_size > 1) {
    id.rank = int(l.rank);
    id.world_size = int(l.world_size);
  }
  id.dump_signal = r->cfg.dump_signal;
  id.dump_dir = r->cfg.dir;
  id.command = status_command_line();
  return status_start(r, id);
}

__attribute__((constructor)) void gpumemrec_constructor() {
  // setuid/setgid program: never record, never write files as its owner
  // (the recorder checks again in its lazy init).
  if (process_is_privileged()) return;
  const int saved = errno;
  Recorder* r = recorder();
  // Before the program loads NVIDIA's libraries (GPUMEMREC_SIMULATE).
  simulated_libraries_load();
  // Before the interpreter reads PYTHONPATH (after main begins).
  python_hook_inject(r && r->cfg.python_hook);
  if (r) {
    dumper_init(r);
    // The status region for `gpumemrec top`, updated after the keeper's passes.
    if (start_status(r)) peak_keeper_set_pass_hooks({status_after_pass_locked, status_after_pass});
    // The peak keeper (peak_keeper.h): without it, peak.json says the window alone.
    if (!peak_keeper_start(r)) GM_DEBUG("no peak keeper thread: peaks come from the ring's window only");
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    if (r->cfg.stack_depth > 0) stack_capture_init(r->cfg.unwinder);
    python_stack_init(r->cfg.python_stacks);
    dumper_start(r);       // exit hooks, LD_PRELOAD for exec
    exit_hook_init();      // _exit / _Exit finish a bundle being written
    signal_dump_start(r);  // GPUMEMREC_DUMP_SIGNAL
  }
  errno = saved;
}

}  // namespace
}  // namespace gpumemrec
