// Our exported _exit and _Exit: a bundle the writer thread is still writing
// is finished first (dumper_before_immediate_exit), then glibc's.
//
// Why: exit() runs our atexit handler, which waits for the writer; _exit()
// runs nothing, and programs call it right after an out-of-memory more often
// than one would think: Python's multiprocessing ends every forked worker
// with os._exit() (Lib/multiprocessing/popen_fork.py, Popen._launch), and so
// do PyTorch DataLoader workers, which are multiprocessing processes. A
// bundle half-written there would be lost.
//
// Both are async-signal-safe and may be called from a signal handler: the
// wait takes no lock and allocates nothing. The real function is looked up
// at start-up (exit_hook_init), not here (dlsym is not async-signal-safe);
// without it, the exit_group system call is what glibc's _exit makes.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "shim/base/hook_table.h"
#include "shim/dump/dumper.h"
#include "shim/dump/status/status_publisher.h"
#include "shim/hooks/exit_hook.h"

namespace gpumemrec {
namespace {

using ExitFn = void (*)(int);
std::atomic<ExitFn> g_real_exit{nullptr};
std::atomic<ExitFn> g_real_Exit{nullptr};

[[noreturn]] void leave(ExitFn real, int status) {
  dumper_before_immediate_exit();
  status_stop();  // the status region's file goes (async-signal-safe)
  if (real) real(status);
  for (;;) syscall(SYS_exit_group, status);
}

}  // namespace

void exit_hook_init() {
  DlsymFn dls = real_dlsym();
  if (!dls) return;
  g_real_exit.store(reinterpret_cast<ExitFn>(dls(RTLD_NEXT, "_exit")), std::memory_order_release);
  g_real_Exit.store(reinterpret_cast<ExitFn>(dls(RTLD_NEXT, "_Exit")), std::memory_order_release);
}

}  // namespace gpumemrec

extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) {
  gpumemrec::leave(gpumemrec::g_real_exit.load(std::memory_order_acquire), status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  gpumemrec::leave(gpumemrec::g_real_Exit.load(std::memory_order_acquire), status);
}
