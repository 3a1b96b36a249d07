// Our own dlopen calls from background work (the writer thread loading libdw
// and NVML at a dump), made safe for a fork() on another thread.
//
// glibc's fork() takes no loader lock: a child forked while another thread
// is inside dlopen() inherits a half-updated list of loaded objects, and its
// next dlopen stops on "Inconsistency detected by ld.so: dl-open.c:
// dl_open_worker_begin: Assertion `... r_state == RT_CONSISTENT' failed"
// (seen in fork_after_oom: the parent's writer loading libdw 200 ms after
// the failure, the child failing itself; 2 runs in 30 broke the child). A
// program's own child would break the same way at its next dlopen (a Python
// worker importing an extension).
//
// So our fork `prepare` handler waits for our dlopen in flight, at most
// kForkWaitMs: bounded, because a library constructor run by that dlopen may
// call pthread_atfork, which waits for glibc's atfork lock,
// held by the forking thread while it runs the prepare handlers
// (posix/register-atfork.c, __run_fork_handlers). By the time constructors
// run, the loader's list is consistent again (dl-open.c sets RT_CONSISTENT
// before _dl_init), so the fork that goes ahead after the wait is safe.
#pragma once

namespace gpumemrec {

constexpr unsigned kForkWaitMs = 200;

// dlopen, counted as in flight while it runs.
void* guarded_dlopen(const char* name, int flags);
// From the fork `prepare` handler: waits (at most kForkWaitMs) until none is.
void loader_guard_before_fork();

}  // namespace gpumemrec
