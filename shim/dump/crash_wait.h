// A bundle being written survives the program's fatal signal.
//
// While the writer thread has work (crash_wait_arm .. crash_wait_disarm),
// handlers are installed for SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE and
// SIGTERM (each only when its disposition is not SIG_IGN). The handler
// records the signal (the episode's verdict becomes fatal), wakes the writer
// and waits for it to finish while it makes progress (exit_wait.h: at most
// GPUMEMREC_EXIT_WAIT_S), polling atomics with nanosleep: async-signal-safe,
// no lock, no allocation. Also before a
// program's own handler: it may end the process by raising the signal again
// with the default action (Python's faulthandler, Modules/faulthandler.c),
// which nothing could wait for. The cost for a program whose handler
// recovers (a JVM's SIGSEGV): its first such signal while a bundle is being
// written waits for that bundle, once. Then it puts back the
// handler it found and lets the signal proceed exactly as it would have:
// a fault (si_code > 0: SIGSEGV from a bad access) returns and faults again
// into the restored handler; a sent signal (abort(), raise(), kill) is raised
// again with the restored disposition, delivered when the handler returns.
// A fatal signal on the writer thread itself is not waited for.
// When the program installs its own handler while we are armed, disarming
// leaves it in place (we put back only our own).
#pragma once

namespace gpumemrec {

// `idle` says whether the writer has finished (async-signal-safe).
void crash_wait_arm(bool (*idle)());
// Unless keep() (checked under the same lock as arming: a job posted
// meanwhile keeps the handlers).
void crash_wait_disarm(bool (*keep)() = nullptr);
// The fatal signal that arrived while armed, 0 if none.
int crash_wait_signal();

void crash_wait_atfork_child();

}  // namespace gpumemrec
