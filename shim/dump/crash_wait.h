// A bundle being written survives the program's fatal signal.
//
// While the writer thread has work (crash_wait_arm .. crash_wait_disarm),
// handlers are installed for SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE and
// SIGTERM (each only when its disposition is not SIG_IGN). When the signal's
// disposition was the default (the process is about to die), the handler
// records the signal (the episode's verdict becomes fatal), wakes the writer
// and waits for it to finish (at most kCrashWaitMs), polling an atomic with
// nanosleep: async-signal-safe, no lock, no allocation. A program's own
// handler is called at once, without waiting (it may recover from the
// signal; if it then ends the process with exit() or _exit(), those wait). Then it puts back the
// handler it found and lets the signal proceed exactly as it would have:
// a fault (si_code > 0: SIGSEGV from a bad access) returns and faults again
// into the restored handler; a sent signal (abort(), raise(), kill) is raised
// again with the restored disposition, delivered when the handler returns.
// A fatal signal on the writer thread itself is not waited for.
// When the program installs its own handler while we are armed, disarming
// leaves it in place (we put back only our own).
#pragma once

namespace gpumemrec {

constexpr unsigned kCrashWaitMs = 10000;

// `idle` says whether the writer has finished (async-signal-safe).
void crash_wait_arm(bool (*idle)());
// Unless keep() (checked under the same lock as arming: a job posted
// meanwhile keeps the handlers).
void crash_wait_disarm(bool (*keep)() = nullptr);
// The fatal signal that arrived while armed, 0 if none.
int crash_wait_signal();

void crash_wait_atfork_child();

}  // namespace gpumemrec
